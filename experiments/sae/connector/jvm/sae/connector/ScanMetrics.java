package sae.connector;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.apache.spark.sql.execution.metric.SQLMetric;

/**
 * A query's sae-ceph numbers as DataSource V2 custom metrics (Spark's SQL UI and event log show
 * them per scan): every stat the class returns with a reply ({@link Protocol#STATS}, summed over
 * the query's calls), the calls made, the time tasks waited for replies, how many replies were
 * whole objects, and the rest of the tasks' reading in time: requests, decoding, Spark's work
 * between reads, and the whole.
 */
public final class ScanMetrics {
  /** Metric names: the protocol's stats, then the connector's own. */
  static final List<String> NAMES;
  private static final List<String> UNITS;
  private static final List<String> DOCS;
  /** The reply stats of the class's scan work proper: decoding, filtering, projecting, encoding,
   * compressing, aggregating and sorting (not reading the object, parsing the request or handing
   * the reply over, which a plain read of the object costs the OSD as well). */
  static final int[] SCAN_WORK_NS;
  static final int TOTAL_NS, WALL_NS, OWN_CALLS_NS, ALL_CALLS_NS, CALLS, WAIT_NS, WHOLE_OBJECTS, READ_WHOLE, READ_ALONGSIDE, TASKS, TASKS_SHORT_OF_CPU, REQUEST_NS, DECODE_NS, LOCAL_SCAN_NS, SPARK_NS, READER_NS;

  static {
    List<String> names = new ArrayList<>(Protocol.STATS), units = new ArrayList<>(ProtocolSpec.STAT_UNITS);
    List<String> docs = new ArrayList<>();
    ProtocolSpec.STAT_DOCS.forEach(d -> docs.add("OSD: " + d));
    names.add("calls");
    units.add("count");
    docs.add("object class calls made");
    names.add("reply_wait_ns");
    units.add("ns");
    docs.add("time tasks waited for replies");
    names.add("whole_objects");
    units.add("count");
    docs.add("replies that were the object itself (every row passed)");
    // a task's reading split in time (wall): requests, waits, decoding, and Spark's own work on
    // the batches between reads; together they make up client_reader_ns
    names.add("objects_read_whole");
    units.add("count");
    docs.add("objects mode auto read whole and scanned in the task (pushed back) instead of in the OSD");
    names.add("objects_read_alongside");
    units.add("count");
    docs.add("of those, objects at the end of a task's list, scanned while its pushed replies were awaited");
    names.add("tasks");
    units.add("count");
    docs.add("tasks that read the scan's objects");
    names.add("tasks_short_of_cpu");
    units.add("count");
    docs.add("of those, tasks whose cost model (mode auto) found the storage side short of CPU at their end");
    names.add("client_request_ns");
    units.add("ns");
    docs.add("time tasks spent building and sending requests");
    names.add("client_decode_ns");
    units.add("ns");
    docs.add("time tasks spent opening replies and decoding their batches");
    names.add("client_local_scan_ns");
    units.add("ns");
    docs.add("of that, time tasks spent scanning objects read whole (mode auto)");
    names.add("client_spark_ns");
    units.add("ns");
    docs.add("time Spark spent on the batches between reads");
    names.add("client_reader_ns");
    units.add("ns");
    docs.add("time tasks read, from their first read to their last");
    NAMES = List.copyOf(names);
    UNITS = List.copyOf(units);
    DOCS = List.copyOf(docs);
    SCAN_WORK_NS = Stream.of("decode_ns", "filter_ns", "project_ns", "encode_ns", "compress_ns",
        "aggregate_ns", "sort_ns").mapToInt(NAMES::indexOf).filter(i -> i >= 0).toArray();
    TOTAL_NS = NAMES.indexOf("total_ns");
    WALL_NS = NAMES.indexOf("wall_ns");
    OWN_CALLS_NS = NAMES.indexOf("own_calls_ns");
    ALL_CALLS_NS = NAMES.indexOf("all_calls_ns");
    CALLS = NAMES.indexOf("calls");
    WAIT_NS = NAMES.indexOf("reply_wait_ns");
    WHOLE_OBJECTS = NAMES.indexOf("whole_objects");
    READ_WHOLE = NAMES.indexOf("objects_read_whole");
    READ_ALONGSIDE = NAMES.indexOf("objects_read_alongside");
    TASKS = NAMES.indexOf("tasks");
    TASKS_SHORT_OF_CPU = NAMES.indexOf("tasks_short_of_cpu");
    REQUEST_NS = NAMES.indexOf("client_request_ns");
    DECODE_NS = NAMES.indexOf("client_decode_ns");
    LOCAL_SCAN_NS = NAMES.indexOf("client_local_scan_ns");
    SPARK_NS = NAMES.indexOf("client_spark_ns");
    READER_NS = NAMES.indexOf("client_reader_ns");
  }

  private ScanMetrics() {}

  static CustomMetric[] supported() {
    CustomMetric[] out = new CustomMetric[NAMES.size()];
    for (int i = 0; i < out.length; i++) {
      boolean nanos = UNITS.get(i).equals("ns");
      String description = "sae " + DOCS.get(i) + (nanos ? " (ms)" : " (" + UNITS.get(i) + ")");
      out[i] = nanos ? new TimeMetric(NAMES.get(i), description) : new CountMetric(NAMES.get(i), description);
    }
    return out;
  }

  /** A task's current values ({@code values} in {@link #NAMES} order). */
  static CustomTaskMetric[] task(long[] values) {
    CustomTaskMetric[] out = new CustomTaskMetric[values.length];
    for (int i = 0; i < out.length; i++) {
      String name = NAMES.get(i);
      long value = values[i];
      out[i] = new CustomTaskMetric() {
        @Override
        public String name() {
          return name;
        }

        @Override
        public long value() {
          return value;
        }
      };
    }
    return out;
  }

  /**
   * The sums over every sae-ceph scan in {@code df}'s executed plan, as a JSON object
   * {name: value}; {@code {}} when the plan has none. Call it after {@code df.collect()} (or
   * another action on {@code df}'s own plan; {@code first()} and {@code show()} run a new plan and
   * leave this one at zero). For applications through py4j:
   * {@code spark._jvm.sae.connector.ScanMetrics.json(df._jdf)}.
   */
  public static String json(Dataset<?> df) {
    long[] sums = new long[NAMES.size()];
    int[] scans = {0};
    walk(df.queryExecution().executedPlan(), p -> {
      if (p instanceof BatchScanExec b && b.scan() instanceof SaeScan) {
        scans[0]++;
        for (int i = 0; i < sums.length; i++) {   // Scala's own Map and Seq calls: the same in Scala 2.12 and 2.13
          scala.Option<SQLMetric> metric = b.metrics().get(NAMES.get(i));
          if (metric.isDefined()) sums[i] += Math.max(0, metric.get().value());
        }
      }
    });
    if (scans[0] == 0) return "{}";
    StringBuilder out = new StringBuilder("{");
    for (int i = 0; i < sums.length; i++) out.append(i == 0 ? "" : ", ").append('"').append(NAMES.get(i))
        .append("\": ").append(sums[i]);
    return out.append('}').toString();
  }

  /** Every node of the plan, through adaptive plans and query stages (reused exchanges skipped). */
  private static void walk(SparkPlan plan, Consumer<SparkPlan> f) {
    f.accept(plan);
    if (plan instanceof AdaptiveSparkPlanExec a) walk(a.executedPlan(), f);
    if (plan instanceof QueryStageExec q) walk(q.plan(), f);
    for (scala.collection.Iterator<SparkPlan> it = plan.children().iterator(); it.hasNext(); ) walk(it.next(), f);
  }
}
