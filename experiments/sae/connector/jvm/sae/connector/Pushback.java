package sae.connector;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Mode auto's choice, per object: push the scan into the OSD, or read the object whole and let
 * Spark decode and filter it (pushback). Each choice is scored by what it cost the task: the
 * reading thread's time from waiting for the object's reply until the next object's, per stored
 * byte (the wait holds the OSD's queueing and work and the transfer; then decoding and Spark's
 * own work on the rows). A moving average of each score is kept per executor and per query shape
 * (path, request), so later queries of the same shape start from what earlier ones measured.
 *
 * <p>An object goes the way whose average is lower. Both ways are tried first; after that the
 * other way is tried again every {@link #explorePeriod}-th object, less often the more it costs,
 * so a change (the OSDs getting busy or idle) is noticed while trying costs at most ~3 %.
 */
final class Pushback {
  /** Weight of the newest cost in a way's moving average. */
  static final double ALPHA = 0.3;
  /** Shapes remembered per executor. */
  private static final int SHAPES = 64;
  private static final Map<String, Pushback> BY_SHAPE = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Pushback> eldest) {
      return size() > SHAPES;
    }
  };

  /** Cost per stored byte (ns), NaN until measured: [pushed, read whole]. */
  private final double[] cost = {Double.NaN, Double.NaN};
  /** Objects sent each way so far: [pushed, read whole]. */
  private final long[] sent = {0, 0};

  /** The choice for a query shape, shared by the executor's tasks. */
  static Pushback of(String shape) {
    synchronized (BY_SHAPE) {
      return BY_SHAPE.computeIfAbsent(shape, k -> new Pushback());
    }
  }

  /**
   * Whether the next object should be pushed into the OSD (false: read whole): the first object
   * of a shape is pushed, the next read whole; until both ways are measured, pushed; then the
   * cheaper way, and the other every {@link #explorePeriod}-th object.
   */
  synchronized boolean push() {
    boolean push;
    if (sent[0] == 0 || sent[1] == 0) {
      push = sent[0] == 0;
    } else if (Double.isNaN(cost[0]) || Double.isNaN(cost[1])) {
      push = true;
    } else {
      boolean cheaper = cost[0] <= cost[1];
      push = (sent[0] + sent[1]) % explorePeriod(cost[0], cost[1]) == 0 ? !cheaper : cheaper;
    }
    sent[push ? 0 : 1]++;
    return push;
  }

  /** Record what an object cost: {@code ns} of the reading thread for {@code bytes} stored. */
  synchronized void measured(boolean pushed, long ns, long bytes) {
    int i = pushed ? 0 : 1;
    double c = (double) ns / Math.max(1, bytes);
    cost[i] = Double.isNaN(cost[i]) ? c : ALPHA * c + (1 - ALPHA) * cost[i];
  }

  /**
   * Every how many objects the costlier way is tried again: every 8th while the two are within
   * 25 %, else every 32·ratio-th (at most 512th), which bounds what trying costs near 3 %.
   */
  static long explorePeriod(double a, double b) {
    double ratio = Math.max(a, b) / Math.max(1e-9, Math.min(a, b));
    return ratio < 1.25 ? 8 : (long) Math.min(512, Math.ceil(32 * ratio));
  }

  /** The averages [pushed, read whole] in ns per stored byte (NaN: not measured), for logs and tests. */
  synchronized double[] costs() {
    return cost.clone();
  }
}
