package io.slaqriffle.seam;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Messages a driver-side component queues for its Python side, which drains them once per poll. Bounded:
 * past {@code capacity} the oldest is dropped, so a Python side that stopped draining cannot grow the
 * driver's heap. Any thread may add; one drains.
 */
public final class Outbox<M extends Messages.Message> {
  private final int capacity;
  private final ConcurrentLinkedQueue<M> queue = new ConcurrentLinkedQueue<>();
  private final AtomicInteger pending = new AtomicInteger();

  public Outbox(int capacity) {
    this.capacity = capacity;
  }

  /** Messages queued and not drained yet (at most {@code capacity}). */
  public int pending() {
    return pending.get();
  }

  /** Queues {@code message}; one past the bound drops the oldest. */
  public void add(M message) {
    queue.add(message);
    if (pending.incrementAndGet() > capacity && queue.poll() != null) {
      pending.decrementAndGet();
    }
  }

  /** Everything queued, oldest first, taken out (a list the caller may append to before it {@link Messages#encode}s it). */
  public List<Messages.Message> drain() {
    List<Messages.Message> out = new ArrayList<>();
    M m;
    while ((m = queue.poll()) != null) {
      pending.decrementAndGet();
      out.add(m);
    }
    return out;
  }
}
