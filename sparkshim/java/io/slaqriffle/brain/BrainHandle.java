package io.slaqriffle.brain;

import java.io.File;
import java.net.URL;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.jar.JarFile;
import org.apache.spark.SparkContext;

/**
 * What the brain (python -m sparkshim.brain) finds as its gateway's entry point: the driver's
 * SparkContext once it is fully built, the class loader holding the shim (so the brain and the
 * plugin share one copy of the shim's classes and the plugin can fail the brain's components open),
 * and the fingerprint of the shim's sources (the brain refuses a jar built from other sources than
 * its own Python, whose messages could differ). The brain's heartbeat arrives here too.
 */
public final class BrainHandle {
  private final CountDownLatch ready = new CountDownLatch(1);
  private final CountDownLatch attached = new CountDownLatch(1);
  private final AtomicLong beats = new AtomicLong();
  private volatile SparkContext sc;

  /** The driver's SparkContext once its constructor reached the plugins' last step, or null after {@code timeoutMillis}. */
  public SparkContext awaitContext(long timeoutMillis) throws InterruptedException {
    return ready.await(timeoutMillis, TimeUnit.MILLISECONDS) ? sc : null;
  }

  public ClassLoader shimClassLoader() {
    return BrainHandle.class.getClassLoader();
  }

  /** Where the running shim classes come from (a jar path, or a directory in a development build). */
  public String shimLocation() {
    URL url = BrainHandle.class.getProtectionDomain().getCodeSource().getLocation();
    return url == null ? "" : url.toString();
  }

  /** The {@code Slaq-Riffle-Sources} fingerprint in the running shim jar's manifest, or "" when unknown. */
  public String shimSources() {
    try {
      URL url = BrainHandle.class.getProtectionDomain().getCodeSource().getLocation();
      try (JarFile jar = new JarFile(new File(url.toURI()))) {
        String value = jar.getManifest().getMainAttributes().getValue("Slaq-Riffle-Sources");
        return value == null ? "" : value;
      }
    } catch (Exception | LinkageError e) {
      return "";
    }
  }

  /** The brain is alive and answering: its heartbeat, called about once a second ({@link BrainWatchdog}). */
  public void alive() {
    beats.incrementAndGet();
  }

  long beats() {
    return beats.get();
  }

  /** The brain attached whatever the confs switch on (called by the brain). */
  public void attached() {
    attached.countDown();
  }

  boolean isAttached() {
    return attached.getCount() == 0;
  }

  void contextReady(SparkContext context) {
    this.sc = context;
    ready.countDown();
  }

  boolean awaitAttached(long millis) throws InterruptedException {
    return attached.await(millis, TimeUnit.MILLISECONDS);
  }
}
