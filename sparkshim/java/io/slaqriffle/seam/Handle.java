package io.slaqriffle.seam;

import java.lang.reflect.AccessibleObject;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.stream.Collectors;
import org.apache.spark.SparkContext;

/**
 * One Spark member the shim reaches that is not public API, declared once beside the accessor that
 * uses it: its owner class, name and signature, the {@link Feature}s that need it, and (resolved on
 * first use, through the class loader that loaded Spark) the member itself. A member the shim calls by
 * normal linkage ({@code private[spark]} methods called directly) is declared the same way, for the
 * self-check only. Each seam class registers its handles in its own {@link Registry} at declaration,
 * so a feature's self-check iterates them: the member is written down once.
 *
 * <p>One jar, compiled against the newest supported Spark, runs on every supported line: a member
 * whose parameters differ between lines is declared with each line's signature ({@link Registry#oneOf})
 * and called through the handle, never by normal linkage (which would fail to link on the other lines).
 */
final class Handle {
  private enum Kind { METHOD, FIELD, CONSTRUCTOR, CALLED }

  private final Set<Feature> features;
  private final Kind kind;
  private final String owner;
  private final String name;
  private final String[][] signatures;  // one, or the alternatives of a member that differs between Spark lines
  private String expected;  // a field's type or a method's return type, when the check holds it to one
  private Handle with;  // checked only when this handle resolved to its withArity-parameter signature
  private int withArity;
  private Consumer<SparkContext> call;  // CALLED: how the check calls it on the context
  private volatile AccessibleObject member;  // cached once found; a miss is looked up again at the next check

  private Handle(Set<Feature> features, Kind kind, String owner, String name, String[]... signatures) {
    this.features = features;
    this.kind = kind;
    this.owner = owner;
    this.name = name;
    this.signatures = signatures.length == 0 ? new String[][] {{}} : signatures;
  }

  /** One signature's parameter types, for {@link Registry#oneOf}. */
  static String[] params(String... types) {
    return types;
  }

  /** The handles of one seam class, each registered at its declaration. */
  static final class Registry {
    private final List<Handle> handles = new CopyOnWriteArrayList<>();

    private Handle add(Handle h) {
      handles.add(h);
      return h;
    }

    /** A public method ({@code params}: class names, or int/long/boolean/double and {@code [J} for long[]). */
    Handle method(Set<Feature> features, String owner, String name, String... params) {
      return add(new Handle(features, Kind.METHOD, owner, name, params));
    }

    /**
     * A public method whose parameters differ between the supported Spark lines: the first of
     * {@code signatures} the running Spark has (newest line first). The feature needs one of them; the
     * accessor asks {@link #arity} which it got.
     */
    Handle oneOf(Set<Feature> features, String owner, String name, String[]... signatures) {
      return add(new Handle(features, Kind.METHOD, owner, name, signatures));
    }

    /** A declared (typically private) field whose type must be {@code type}. */
    Handle field(Set<Feature> features, String owner, String name, Class<?> type) {
      Handle h = add(new Handle(features, Kind.FIELD, owner, name));
      h.expected = type.getName();
      return h;
    }

    /** A public constructor. */
    Handle constructor(Set<Feature> features, String owner, String... params) {
      return add(new Handle(features, Kind.CONSTRUCTOR, owner, "<init>", params));
    }

    /**
     * A member of SparkContext, checked by calling it on the context ({@code call}), not looked up:
     * reflecting over SparkContext's or SparkEnv's methods loads types missing from pyspark's jars.
     */
    Handle called(Set<Feature> features, String owner, String name, Consumer<SparkContext> call) {
      Handle h = add(new Handle(features, Kind.CALLED, owner, name));
      h.call = call;
      return h;
    }

    /** Adds to {@code problems} what is missing of the handles {@code feature} needs on {@code sc}. */
    void check(Feature feature, SparkContext sc, List<String> problems) {
      for (Handle h : handles) {
        boolean needed = h.features.contains(feature) && (h.with == null || h.with.problem() == null && h.with.arity() == h.withArity);
        String p = !needed ? null : h.kind == Kind.CALLED ? h.calledOn(sc) : h.problem();
        if (p != null) {
          problems.add(p);
        }
      }
    }
  }

  /** Holds this method to returning {@code type} (a subclass is fine). */
  Handle returning(String type) {
    expected = type;
    return this;
  }

  /**
   * Needed only where {@code other} resolved to its {@code arity}-parameter signature: a member that came
   * with that signature, absent on the lines that have the other one (the accessor then does without it).
   */
  Handle onlyWith(Handle other, int arity) {
    with = other;
    withArity = arity;
    return this;
  }

  /** The class {@code className} as Spark's class loader sees it, or null. */
  private static Class<?> cls(String className) {
    try {
      return Class.forName(className, false, SparkContext.class.getClassLoader());
    } catch (ClassNotFoundException | LinkageError e) {
      return null;
    }
  }

  private static Class<?>[] types(String... names) {
    Class<?>[] out = new Class<?>[names.length];
    for (int i = 0; i < names.length; i++) {
      out[i] = switch (names[i]) {
        case "int" -> int.class;
        case "long" -> long.class;
        case "boolean" -> boolean.class;
        case "double" -> double.class;
        case "[J" -> long[].class;
        default -> cls(names[i]);
      };
      if (out[i] == null) {
        return null;
      }
    }
    return out;
  }

  private String calledOn(SparkContext sc) {
    try {
      call.accept(sc);
      return null;
    } catch (RuntimeException | LinkageError e) {
      return label() + ": " + e;
    }
  }

  private AccessibleObject resolve() {
    AccessibleObject m = member;
    if (m != null) {
      return m;
    }
    Class<?> c = cls(owner);
    if (c == null) {
      return null;
    }
    for (String[] params : signatures) {
      Class<?>[] p = types(params);
      try {
        if (p == null) {
          continue;
        }
        m = switch (kind) {
          case METHOD, CALLED -> c.getMethod(name, p);
          case CONSTRUCTOR -> c.getConstructor(p);
          case FIELD -> c.getDeclaredField(name);
        };
        if (kind == Kind.FIELD) {
          m.setAccessible(true);
        } else {
          m.trySetAccessible();
        }
        member = m;
        return m;
      } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
        // not this signature: try the next
      }
    }
    return null;
  }

  private String label() {
    String simple = owner.substring(owner.lastIndexOf('.') + 1);
    String params = Arrays.stream(signatures).map(p -> "(" + String.join(", ", p) + ")").collect(Collectors.joining(" or "));
    return switch (kind) {
      case FIELD -> simple + "." + name;
      case CONSTRUCTOR -> simple + params;
      case METHOD, CALLED -> simple + "." + name + params;
    };
  }

  /** What is wrong with this handle on the running Spark, or null when it resolves (with the expected type). */
  String problem() {
    AccessibleObject m = resolve();
    if (m == null) {
      return label() + " not found";
    }
    Class<?> actual = m instanceof Field f ? f.getType() : m instanceof Method meth ? meth.getReturnType() : null;
    Class<?> want = expected == null ? null : cls(expected);
    if (expected != null && (want == null || !want.isAssignableFrom(actual))) {
      return label() + (kind == Kind.FIELD ? " is a " : " returns ") + actual.getName() + ", expected " + expected;
    }
    return null;
  }

  private AccessibleObject member() {
    AccessibleObject m = resolve();
    if (m == null) {
      throw new IllegalStateException(label() + " not found");
    }
    return m;
  }

  /** The class that declares the member (what its targets must be instances of). */
  Class<?> owner() {
    return ((java.lang.reflect.Member) member()).getDeclaringClass();
  }

  /** The owner's class name, as declared. */
  String ownerName() {
    return owner;
  }

  /** Reads the field on {@code target} (null for a static one). */
  Object get(Object target) throws IllegalAccessException {
    return ((Field) member()).get(target);
  }

  /** Writes the field on {@code target}. */
  void set(Object target, Object value) throws IllegalAccessException {
    ((Field) member()).set(target, value);
  }

  /** Calls the method on {@code target} (null for a static one). */
  Object invoke(Object target, Object... args) throws ReflectiveOperationException {
    return ((Method) member()).invoke(target, args);
  }

  /**
   * Calls the method as a direct call would: what it throws is rethrown as it is; only a failure to
   * call it at all (its feature off, a wrong argument) becomes an IllegalStateException.
   */
  Object call(Object target, Object... args) {
    try {
      return invoke(target, args);
    } catch (InvocationTargetException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      if (e.getCause() instanceof Error err) {
        throw err;
      }
      throw new IllegalStateException(label() + " failed: " + e.getCause(), e.getCause());
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot call " + label() + ": " + e, e);
    }
  }

  /** How many parameters the member resolved to has: which of {@link Registry#oneOf}'s signatures the running Spark has. */
  int arity() {
    return ((Executable) member()).getParameterCount();
  }
}
