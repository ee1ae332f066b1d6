package io.slaqriffle.seam;

/** How a count reads in a log line or a page: the noun in the singular for exactly one ({@code 1 job, 3 jobs}). */
public final class Words {
  private Words() {}

  /** {@code n} and {@code noun}, with an {@code s} unless {@code n} is 1. */
  public static String counted(long n, String noun) {
    return n + " " + (n == 1 ? noun : noun + "s");
  }
}
