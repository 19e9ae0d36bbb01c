package sae.connector;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Mode auto's choice, per object: push the scan into the OSD, or read the object whole and run
 * the same scan in the task ({@link LocalScan}: pushback). A cost model fed by what each way
 * cost the task and by what the OSDs report in their replies, kept per executor and per query
 * shape (path, request), so later queries of the same shape start from what earlier ones
 * measured.
 *
 * <p>A way's cost is the reading thread's time from waiting for the object's reply until the
 * next object's, per stored byte (the wait holds the OSD's queueing and work and the transfer;
 * then decoding and Spark's own work on the rows; for an object read whole, the scan run here).
 * Pushing back can only save the OSD's scan work, what a plain read of the object does not do:
 * its replies report that ({@link #osdWork}: the call's wall time times the share of its CPU
 * time spent decoding, filtering and encoding, over how many of the query's own calls ran beside
 * it, so CPU contention on the storage side shows in it and the query's own calls do not), live,
 * in every pushed reply. A whole-object reply (every row passed, the file sent as stored) did no
 * such work: pushing it back saves nothing. Pushing back adds the transfer of the stored bytes
 * and the scan of them in the task, the <em>extra</em>, which whole reads measure: their cost
 * less the <em>base</em> both ways pay (a pushed object's cost less the saving). The queueing in
 * the OSD is in both ways and cancels: an object is read whole when the saving exceeds the
 * extra, so a storage side busy with another tenant's calls (long queues, little work per call)
 * keeps the scans pushed, and one short of CPU for them pushes back.
 *
 * <p>The first object of a shape is pushed, the next read whole (so both are measured). The
 * other way is tried again every {@link #explorePeriod}-th object, less often the more the model
 * says it costs: trying the whole read refreshes the extra, trying the push the saving.
 *
 * <p>Both ways at once ({@link #tail}): while a task waits for its pushed replies its thread is
 * idle, and the OSD's scan work is what it waits for. A task may therefore keep the last objects
 * of its list back and read them whole, to scan them in that idle time: as many as the model says
 * fit in the pushed objects' waits, when the waits are the OSD's scan work (not the transfer of
 * replies, which a whole read would only add to) and the storage side is short of CPU (its
 * calls stretched beyond what the class's calls beside them explain). Such a task pushes its
 * other objects: the tail is its split, and the per-object choice ({@link #push}) is for tasks
 * that keep nothing back.
 */
final class Pushback {
  /** Weight of the newest value in a moving average of the reading thread's times (noisy). */
  static final double ALPHA = 0.3;
  /** Weight of the newest saving: the OSD reports its own work, so one pushed object says much. */
  static final double ALPHA_SAVING = 0.7;
  /** How far a pushed call's stretch (wall over CPU time) must exceed the class's calls running
   * beside it for the storage side to count as short of CPU ({@link #shortage}). */
  static final double SHORT_OF_CPU = 1.5;
  /** Shapes remembered per executor. */
  private static final int SHAPES = 64;
  private static final Map<String, Pushback> BY_SHAPE = new LinkedHashMap<>(16, 0.75f, true) {
    @Override
    protected boolean removeEldestEntry(Map.Entry<String, Pushback> eldest) {
      return size() > SHAPES;
    }
  };

  /** What both ways cost per stored byte (ns): a pushed object's cost less the OSD's scan work
   * (queueing, reading, the reply's transfer and decoding). */
  private double base = Double.NaN;
  /** The OSD's scan work, per stored byte (ns, wall), from pushed replies: what pushing back saves. */
  private double saving = Double.NaN;
  /** What a whole read adds per stored byte to the base (ns): its cost less the base. A queue that
   * varies from object to object makes single samples swing either way; one below 0 (a whole read
   * caught a short queue) is taken as 0. */
  private double extra = Double.NaN;
  /** A pushed object's wait for its reply, per stored byte (ns): the reading thread's idle time. */
  private double waited = Double.NaN;
  /** What an object of a task's tail (read whole while pushed replies are awaited) cost the
   * reading thread, per stored byte (ns): its read's wait, the scan here and Spark's work. */
  private double tailCost = Double.NaN;
  /** A pushed call's stretch (wall over CPU time) over the class's calls the OSD ran beside it
   * (every client's, itself included): about 1 or below where those calls explain the stretch
   * (queued behind the query's own or another tenant's calls), above where something outside the
   * class takes the storage side's CPU; NaN until a reply reports the calls. */
  private double shortage = Double.NaN;
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
   * way the model says is cheaper, and the other every {@link #explorePeriod}-th object.
   */
  synchronized boolean push() {
    boolean push;
    if (sent[0] == 0 || sent[1] == 0) {
      push = sent[0] == 0;
    } else if (Double.isNaN(extra)) {
      push = true;
    } else {
      boolean cheaper = saving <= extra;
      push = (sent[0] + sent[1]) % explorePeriod(base + saving, base + extra) == 0 ? !cheaper : cheaper;
    }
    sent[push ? 0 : 1]++;
    return push;
  }

  /**
   * Record what an object cost: {@code ns} of the reading thread for {@code bytes} stored; for a
   * pushed object, {@code osdWorkNs}, the OSD's reported scan work on it (wall).
   */
  synchronized void measured(boolean pushed, long ns, long bytes, long osdWorkNs) {
    double c = (double) ns / Math.max(1, bytes);
    if (pushed) {
      double work = (double) osdWorkNs / Math.max(1, bytes);
      saving = average(saving, work, ALPHA_SAVING);
      base = average(base, c - work, ALPHA);
    } else if (!Double.isNaN(base)) {   // never below 0: it moves the stored bytes and scans them here
      extra = average(extra, Math.max(0, c - base), ALPHA);
    }
  }

  /** Record a pushed object's wait for its reply: {@code ns} for {@code bytes} stored. */
  synchronized void waited(long ns, long bytes) {
    waited = average(waited, (double) ns / Math.max(1, bytes), ALPHA);
  }

  /**
   * Record a pushed reply's call: {@code wallNs} long, {@code cpuNs} of CPU time, with
   * {@code allCallsNs} (calls x ns) of the class's calls running beside it; ignored when the reply
   * does not say.
   */
  synchronized void stretched(long wallNs, long cpuNs, long allCallsNs) {
    if (wallNs <= 0 || cpuNs <= 0 || allCallsNs <= 0) return;
    shortage = average(shortage, (double) wallNs / cpuNs / callsBeside(allCallsNs, wallNs), ALPHA_SAVING);
  }

  /** Whether the storage side is short of CPU for the class's calls ({@link #shortage} at least
   * {@link #SHORT_OF_CPU}); null until a reply reports the calls beside it. */
  synchronized Boolean shortOfCpu() {
    return Double.isNaN(shortage) ? null : shortage >= SHORT_OF_CPU;
  }

  /** Record what a tail object cost the reading thread: {@code ns} for {@code bytes} stored. */
  synchronized void measuredTail(long ns, long bytes) {
    tailCost = average(tailCost, (double) ns / Math.max(1, bytes), ALPHA);
  }

  /**
   * How many of a task's objects ({@code sizes}, in list order) to keep back at the end of its
   * list and read whole while the others' pushed replies are awaited: the most whose predicted
   * cost fits in the pushed objects' predicted waits. A kept-back object is predicted to cost what
   * a whole read in turn costs (base and extra), its transfer included although the reading thread
   * need not wait for it: its bytes cross the link the pushed replies come by, and delay them (on
   * an idle storage side, pushback=half made the tasks wait 0.17 s longer per query, near the
   * kept-back objects' 0.23 s on the link); more, when kept-back objects cost the thread more.
   * None until the waits and a whole read are measured, or when less than half of a pushed
   * object's wait is the OSD's scan work (the saving): then the wait is the transfer or another
   * tenant's queue, which the whole reads would share; nor unless the storage side is short of
   * CPU ({@link #shortage} at least {@link #SHORT_OF_CPU}): where the class's calls explain their
   * stretch, the query's own and another tenant's calls, the OSD's scan work is what the task
   * waits for but scanning objects here only trades it for their bytes on the link.
   */
  synchronized int tail(long[] sizes) {
    double whole = Double.isNaN(tailCost) ? base + extra : Math.max(base + extra, tailCost);
    if (Double.isNaN(waited) || Double.isNaN(whole) || Double.isNaN(saving) || saving < 0.5 * waited
        || !Boolean.TRUE.equals(shortOfCpu())) return 0;
    long pushed = 0;
    for (long s : sizes) pushed += s;
    long kept = 0;
    int n = 0;
    while (n < sizes.length - 1) {
      long next = sizes[sizes.length - 1 - n];
      if (whole * (kept + next) > waited * (pushed - next)) break;
      kept += next;
      pushed -= next;
      n++;
    }
    return n;
  }

  private static double average(double mean, double value, double weight) {
    return Double.isNaN(mean) ? value : weight * value + (1 - weight) * mean;
  }

  /**
   * What pushing a pushed object back would have saved the query in the OSD, from its reply's
   * stats: the call's wall time times the share of its CPU time spent on the scan proper
   * (decoding, filtering, encoding: what a plain read of the object does not do), over how many
   * of the query's own calls the OSD ran beside it on average ({@code ownCallsNs / wallNs}, itself
   * included; 1 when the reply does not say). A call's wall time is stretched by every call and
   * process sharing the OSD's cores; its scan CPU time, once freed, goes to all of them, and the
   * query gets its own calls' share back: with {@code n} of its calls among {@code m} running, a
   * call's wall time is its CPU time times {@code m} over the cores and the query gains its CPU
   * time times {@code m / n} over the cores, so the wall time over {@code n}. On an idle OSD that
   * is the call's CPU time; under another tenant's load, more. 0 when the reply reports nothing.
   */
  static long osdWork(long wallNs, long totalCpuNs, long scanCpuNs, long ownCallsNs) {
    if (wallNs <= 0 || totalCpuNs <= 0) return 0;
    double scanShare = Math.min(1.0, (double) scanCpuNs / totalCpuNs);
    return Math.round(wallNs * scanShare / callsBeside(ownCallsNs, wallNs));
  }

  /** How many calls ran beside a call on average, itself included, from a reply's calls x ns
   * count over its wall time (docs/protocol.md, "Calls beside"); 1 when the reply does not say. */
  private static double callsBeside(long callsNs, long wallNs) {
    return Math.max(1.0, (double) callsNs / wallNs);
  }

  /**
   * Every how many objects the costlier way is tried again: every 8th while the two are within
   * 25 %, else every 32·ratio-th (at most 512th), which bounds what trying costs near 3 %.
   */
  static long explorePeriod(double a, double b) {
    double ratio = Math.max(a, b) / Math.max(1e-9, Math.min(a, b));
    return ratio < 1.25 ? 8 : (long) Math.min(512, Math.ceil(32 * ratio));
  }
}
