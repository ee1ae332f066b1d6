package io.slaqriffle.seam;

/** HTML pieces the tabs' pages share: text made safe for content and attribute values, and their tables' frame. */
public final class Html {
  /** Between a table's header cells and its rows. */
  public static final String HEAD_END = "</tr></thead><tbody>";

  /** Longest a user-supplied name is shown, in code points (a longer one ends in an ellipsis; the JSON keeps it whole). */
  public static final int MAX_NAME = 120;

  private Html() {}

  /**
   * A user-supplied name (job, stage, group) as HTML content among other names: {@link #text} isolated in a
   * {@code <bdi>}, so right-to-left text in one name cannot reorder its neighbours.
   */
  public static String name(String name) {
    return "<bdi>" + text(name) + "</bdi>";
  }

  /**
   * A user-supplied name as escaped text where no {@code <bdi>} can go (SVG): {@link #plain}, HTML-escaped.
   */
  public static String text(String name) {
    return escape(plain(name));
  }

  /**
   * A user-supplied name made inert for a log line or a page: control characters (C0, DEL, C1 such as NEL, line and
   * paragraph separators) and bidirectional formatting characters (embeddings, overrides, isolates, marks) shown as a
   * backslash, 'u' and four hex digits instead of acting on what follows (no forged log lines, terminal escapes or
   * reordered neighbours), and at most {@link #MAX_NAME} code points.
   */
  public static String plain(String name) {
    StringBuilder b = new StringBuilder();
    int shown = 0;
    for (int i = 0; i < name.length(); ) {
      int cp = name.codePointAt(i);
      i += Character.charCount(cp);
      if (shown == MAX_NAME - 1 && i < name.length()) {
        b.append('\u2026');
        break;
      }
      appendInert(b, cp);
      shown++;
    }
    return b.toString();
  }

  /** {@code cp}, or its escape when it is a control or bidirectional formatting character. */
  private static void appendInert(StringBuilder b, int cp) {
    if (showsAsItself(cp)) {
      b.appendCodePoint(cp);
    } else {
      b.append(String.format("\\u%04X", cp));
    }
  }

  /** Whether {@code cp} shows as itself: not a control, line or paragraph separator, or bidirectional formatting character. */
  static boolean showsAsItself(int cp) {
    return !control(cp) && !bidiControl(cp);
  }

  /** A control character (C0, DEL, C1 such as NEL) or a line or paragraph separator. */
  static boolean control(int cp) {
    int type = Character.getType(cp);
    return type == Character.CONTROL || type == Character.LINE_SEPARATOR || type == Character.PARAGRAPH_SEPARATOR;
  }

  static boolean bidiControl(int cp) {
    return cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
  }

  /** The start of a page's table: its heading, then the table (Spark's own table classes) up to its header cells. */
  public static String tableStart(String heading, String id) {
    return "<h4>" + heading + "</h4><table id=\"" + id + "\" class=\"table table-bordered table-sm table-striped\"><thead><tr>";
  }

  /**
   * {@code s} safe for HTML and SVG content and attribute values (job, stage and merger names are user input):
   * markup escaped, and control characters (C0, DEL, C1, line and paragraph separators) as a backslash, 'u' and four
   * hex digits, so none reaches the page raw.
   */
  public static String escape(String s) {
    StringBuilder b = new StringBuilder(s.length());
    for (char c : s.toCharArray()) {
      switch (c) {
        case '&' -> b.append("&amp;");
        case '<' -> b.append("&lt;");
        case '>' -> b.append("&gt;");
        case '"' -> b.append("&quot;");
        case '\'' -> b.append("&#39;");
        default -> {
          if (control(c)) {
            b.append(String.format("\\u%04X", (int) c));
          } else {
            b.append(c);
          }
        }
      }
    }
    return b.toString();
  }
}
