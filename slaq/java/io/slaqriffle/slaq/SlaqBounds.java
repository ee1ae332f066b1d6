package io.slaqriffle.slaq;

import java.util.ArrayList;
import java.util.List;

/**
 * What the SLAQ tab's model may hold, in every dimension a user controls, and the pure functions that hold an epoch to
 * it: whatever the number of jobs, the length of their names or the source of the epoch (the live loop, or an event
 * log the History Server replays, which may be forged), one epoch keeps at most {@link #MAX_EPOCH_JOBS} jobs (the
 * first in the loop's order, which is arrival, so a job listed stays listed until it ends) and {@link #MAX_FINISHED}
 * final rows, and no text longer than {@link #MAX_NAME_BYTES} UTF-8 bytes. {@link SlaqStatus} keeps as many epochs
 * as fit {@link #MAX_WINDOW_BYTES}.
 */
final class SlaqBounds {
  /** Jobs one epoch lists (the tab's table, charts, JSON, event log); the loop lists as many ({@code slaq.live.status}). */
  static final int MAX_EPOCH_JOBS = 1000;
  /** Final rows one epoch carries, as the tab keeps finished jobs. */
  static final int MAX_FINISHED = SlaqStatus.MAX_FINISHED;
  /** Longest text of a row (job name, group, target, why, state) in UTF-8 bytes; {@code slaq.job} refuses longer names. */
  static final int MAX_NAME_BYTES = 1024;
  /** Estimated heap the retained epochs may take; wider epochs are kept fewer (the oldest dropped first). */
  static final long MAX_WINDOW_BYTES = 16L << 20;
  /** A row's heap besides its text: the record with its 21 fields and its list slot (an estimate, on the high side). */
  private static final long ROW_BYTES = 200;
  /** A string's heap besides its characters. */
  private static final long STRING_BYTES = 48;

  private SlaqBounds() {}

  /** {@code s} held to the bounds: itself when it already was (the common case costs no copy). */
  static SlaqMessages.EpochStatus bounded(SlaqMessages.EpochStatus s) {
    List<SlaqMessages.JobStatus> jobs = rows(s.jobs(), 0, Math.min(s.jobs().size(), MAX_EPOCH_JOBS));
    List<SlaqMessages.JobStatus> finished = rows(s.finished(), Math.max(s.finished().size() - MAX_FINISHED, 0), s.finished().size());
    String policy = capped(s.policy());
    if (jobs == s.jobs() && finished == s.finished() && policy == s.policy()) {
      return s;
    }
    return new SlaqMessages.EpochStatus(s.epoch(), s.t(), policy, s.capacity(), jobs, finished);
  }

  /** {@code rows[from, to)} with each row's text capped; {@code rows} itself when that is all of it, unchanged. */
  private static List<SlaqMessages.JobStatus> rows(List<SlaqMessages.JobStatus> rows, int from, int to) {
    List<SlaqMessages.JobStatus> out = new ArrayList<>(to - from);
    boolean same = from == 0 && to == rows.size();
    for (int i = from; i < to; i++) {
      SlaqMessages.JobStatus j = rows.get(i);
      SlaqMessages.JobStatus c = row(j);
      same &= c == j;
      out.add(c);
    }
    return same ? rows : out;
  }

  /** {@code j} with its text capped; itself when none was too long. */
  static SlaqMessages.JobStatus row(SlaqMessages.JobStatus j) {
    String job = capped(j.job());
    String state = capped(j.state());
    String why = capped(j.why());
    String group = capped(j.group());
    String target = capped(j.target());
    if (job == j.job() && state == j.state() && why == j.why() && group == j.group() && target == j.target()) {
      return j;
    }
    return new SlaqMessages.JobStatus(job, state, j.iterations(), j.loss(), j.normalizedLoss(), j.predictedGain(), j.cores(), j.usedCores(), why,
        j.wallSeconds(), j.coreSeconds(), j.secondsToTarget(), group, j.candidate(), j.fold(), j.refit(), j.driverFraction(),
        j.secondsToNinety(), target, j.firstLoss(), j.lossFloor());
  }

  /** The longest prefix of {@code s} (whole code points) of at most {@link #MAX_NAME_BYTES} UTF-8 bytes; {@code s} when it fits. */
  static String capped(String s) {
    if (s.length() <= MAX_NAME_BYTES / 3) { // at most 3 bytes per char (a surrogate pair: 4 for 2)
      return s;
    }
    int bytes = 0;
    for (int i = 0; i < s.length(); ) {
      int cp = s.codePointAt(i);
      int n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
      if (bytes + n > MAX_NAME_BYTES) {
        return s.substring(0, i);
      }
      bytes += n;
      i += Character.charCount(cp);
    }
    return s;
  }

  /** The heap epoch {@code s} takes, estimated from its rows and their text (what the window's budget counts). */
  static long bytes(SlaqMessages.EpochStatus s) {
    long b = ROW_BYTES + STRING_BYTES + s.policy().length();
    for (List<SlaqMessages.JobStatus> rows : List.of(s.jobs(), s.finished())) {
      for (SlaqMessages.JobStatus j : rows) {
        b += ROW_BYTES + 5 * STRING_BYTES + 2L * (j.job().length() + j.state().length() + j.why().length() + j.group().length() + j.target().length());
      }
    }
    return b;
  }
}
