package sae.connector;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import java.util.stream.Collectors;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.expressions.NamedReference;
import org.apache.spark.sql.connector.expressions.NullOrdering;
import org.apache.spark.sql.connector.expressions.SortDirection;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.filter.Predicate;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownLimit;
import org.apache.spark.sql.connector.read.SupportsPushDownTopN;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.SupportsRuntimeV2Filtering;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.internal.connector.PredicateUtils;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * One query's scan: the filters the class accepted, the columns the query uses, and partitions of
 * objects. Where the OSDs scan every object (offload), one partition per task slot (Spark's
 * default parallelism, or {@code spark.sql.files.minPartitionNum}) of about equal bytes: the task
 * decodes only what survives, so more tasks would add only their own costs. Otherwise objects
 * packed by bytes as Spark packs files ({@code spark.sql.files.maxPartitionBytes},
 * {@code openCostInBytes}, default parallelism): with no-offload the executors decode every byte,
 * and before an executor has registered the slots are unknown. Mode auto's cost model plans as
 * offload where the last query of the same shape found CPU enough on the storage side
 * ({@link CpuVerdict}), and packs by bytes otherwise: there its tasks split their objects between
 * the OSDs and themselves, and smaller tasks leave that split room (docs/connector.md, "Tasks").
 * Its size estimate is the objects' bytes scaled to the columns read, as Spark's file scans
 * estimate theirs (so a small dimension table is broadcast in a join). In modes that push down,
 * Spark may add filters at run time (dynamic pruning: a join's other side's keys, as an IN filter)
 * and those go to the OSDs too.
 */
final class SaeScan implements Scan, Batch, SupportsReportStatistics, SupportsRuntimeV2Filtering {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(SaeScan.class);
  private final Options options;
  private final StructType table;
  private final StructType readSchema;
  private final List<String> requested;
  private final List<Protocol.Node> accepted;
  private final List<Filter> pushed;
  private final List<CephFiles.ObjectRef> objects;
  private final Aggregates.Pushed aggregate;
  private final TopK topK;

  private SaeScan(Options options, StructType table, StructType readSchema, List<Protocol.Node> accepted,
      Filter[] pushed, Aggregates.Pushed aggregate, TopK topK, List<CephFiles.ObjectRef> objects) {
    this.options = options;
    this.table = table;
    this.objects = objects;
    this.aggregate = aggregate;
    this.topK = topK;
    this.readSchema = aggregate != null ? aggregate.schema() : readSchema;
    this.accepted = new ArrayList<>(accepted);
    this.pushed = new ArrayList<>(Arrays.asList(pushed));
    if (!options.mode.pushdown || aggregate != null) {
      requested = List.of();   // every column (the thesis's no-offload), or the aggregation's
    } else if (readSchema.isEmpty()) {
      // count(*): the narrowest column carries the row count (an empty list means "all")
      StructField narrow = Arrays.stream(table.fields())
          .min((a, b) -> Integer.compare(a.dataType().defaultSize(), b.dataType().defaultSize())).orElseThrow();
      requested = List.of(narrow.name());
    } else {
      requested = List.of(readSchema.fieldNames());
    }
  }

  @Override
  public StructType readSchema() {
    return readSchema;
  }

  @Override
  public String description() {
    return Options.FORMAT + " " + options.path + " mode=" + options.mode.option
        + (options.mode.pushback ? " pushback=" + options.pushback : "") + (options.mode.index ? " index" : "")
        + " compression="
        + options.compression + " PushedFilters: [" + pushed.stream().map(Filter::toString)
        .collect(Collectors.joining(", ")) + "] " + (aggregate != null ? aggregate.describe()
        : "OsdColumns: " + (requested.isEmpty() ? "*" : requested)) + (topK != null ? " " + topK.describe() : "");
  }

  @Override
  public Statistics estimateStatistics() {
    long bytes = objects.stream().mapToLong(CephFiles.ObjectRef::size).sum();
    long size = (long) ((double) bytes / Math.max(1, table.defaultSize()) * Math.max(1, readSchema.defaultSize()));
    return new Statistics() {
      @Override
      public OptionalLong sizeInBytes() {
        return OptionalLong.of(size);
      }

      @Override
      public OptionalLong numRows() {
        return OptionalLong.empty();
      }
    };
  }

  /** The columns Spark may filter on at run time: the read columns, in modes that push down rows. */
  @Override
  public NamedReference[] filterAttributes() {
    if (!options.mode.pushdown || aggregate != null) return new NamedReference[0];
    return Arrays.stream(readSchema.fieldNames()).map(Expressions::column).toArray(NamedReference[]::new);
  }

  /** Runtime filters (dynamic pruning) join the pushed ones: those the class runs exactly. */
  @Override
  public void filter(Predicate[] predicates) {
    Filters translator = new Filters(table);
    for (Predicate p : predicates) {
      scala.Option<Filter> v1 = PredicateUtils.toV1(p);
      Protocol.Node n = v1.isDefined() ? translator.translate(v1.get()) : null;
      if (n != null && Filters.fitsBeside(accepted, n)) {
        accepted.add(n);
        pushed.add(v1.get());
      }
    }
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public CustomMetric[] supportedCustomMetrics() {
    return ScanMetrics.supported();
  }

  @Override
  public ColumnarSupportMode columnarSupportMode() {
    return ColumnarSupportMode.SUPPORTED;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    if (options.objectsPerPartition > 0) {
      List<InputPartition> out = new ArrayList<>();
      for (int i = 0; i < objects.size(); i += options.objectsPerPartition) {
        out.add(new ObjectsPartition(objects.subList(i, Math.min(objects.size(), i + options.objectsPerPartition))));
      }
      return out.toArray(new InputPartition[0]);
    }
    SQLConf conf = SQLConf.get();
    SparkContext sc = SparkSession.active().sparkContext();
    int parallelism = conf.filesMinPartitionNum().isDefined()
        ? ((Number) conf.filesMinPartitionNum().get()).intValue() : sc.defaultParallelism();
    // one task per slot for offload, and for auto's model where the last query of its shape found
    // CPU enough on the storage side; once the slots are known (the class's doc says why)
    boolean slotsKnown = sc.isLocal() || sc.statusTracker().getExecutorInfos().length > 1;
    boolean perSlot = options.mode.pushdown && slotsKnown
        && (!options.mode.pushback || options.costModel() && CpuVerdict.enough(description()));
    return perSlot ? spread(Math.min(objects.size(), Math.max(1, parallelism)))
        : packByBytes(conf.filesMaxPartitionBytes(), conf.filesOpenCostInBytes(), parallelism);
  }

  /** {@code n} partitions of about equal bytes (largest object first onto the lightest), each in
   * listing order. */
  private InputPartition[] spread(int n) {
    List<List<Integer>> parts = new ArrayList<>();
    long[] bytes = new long[n];
    for (int p = 0; p < n; p++) parts.add(new ArrayList<>());
    List<Integer> largestFirst = new ArrayList<>();
    for (int i = 0; i < objects.size(); i++) largestFirst.add(i);
    largestFirst.sort((a, b) -> Long.compare(objects.get(b).size(), objects.get(a).size()));
    for (int i : largestFirst) {
      int lightest = 0;
      for (int p = 1; p < n; p++) if (bytes[p] < bytes[lightest]) lightest = p;
      parts.get(lightest).add(i);
      bytes[lightest] += objects.get(i).size();
    }
    return parts.stream().map(ids -> new ObjectsPartition(ids.stream().sorted().map(objects::get).toList()))
        .toArray(InputPartition[]::new);
  }

  /** Objects packed by bytes as Spark packs files: the executor decodes what it receives. */
  private InputPartition[] packByBytes(long maxPartitionBytes, long open, int parallelism) {
    List<InputPartition> out = new ArrayList<>();
    long total = objects.stream().mapToLong(o -> o.size() + open).sum();
    long maxBytes = Math.min(maxPartitionBytes, Math.max(open, total / Math.max(1, parallelism)));
    List<CephFiles.ObjectRef> current = new ArrayList<>();
    long bytes = 0;
    for (CephFiles.ObjectRef o : objects) {
      if (!current.isEmpty() && bytes + o.size() > maxBytes) {
        out.add(new ObjectsPartition(current));
        current = new ArrayList<>();
        bytes = 0;
      }
      current.add(o);
      bytes += o.size() + open;
    }
    if (!current.isEmpty()) out.add(new ObjectsPartition(current));
    return out.toArray(new InputPartition[0]);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    boolean csv = !objects.isEmpty() && CephFiles.csv(objects.get(0));   // every file then (SaeCephProvider)
    return new ObjectsReader.Factory(options, readSchema, requested, Filters.all(accepted), aggregate, topK,
        description(), options.costModel() ? CpuVerdict.open(SparkSession.active().sparkContext(), description()) : null,
        csv ? Protocol.schemaMessage(ArrowTypes.toArrow(table)) : null);
  }

  /** The objects one task scans. */
  record ObjectsPartition(List<CephFiles.ObjectRef> objects) implements InputPartition {
    ObjectsPartition {
      objects = List.copyOf(objects);
    }
  }

  /**
   * A LIMIT (no sort keys) or ORDER BY ... LIMIT pushed per object: each object returns its first
   * {@code limit} rows by {@code orderBy} (and the rows tied with the last of them), and Spark
   * sorts and limits what all objects returned.
   */
  record TopK(int limit, List<Protocol.SortKey> orderBy) implements java.io.Serializable {
    String describe() {
      return orderBy.isEmpty() ? "Limit: " + limit : "TopN: " + limit + " " + orderBy.stream()
          .map(k -> k.column() + (k.descending() ? " DESC" : " ASC") + (k.nullsFirst() ? " NULLS FIRST" : " NULLS LAST"))
          .toList();
    }
  }

  /**
   * Accepts the filters the class runs exactly (modes that push down), the columns the query
   * uses, and (offload, auto) a GROUP BY with aggregates the class computes exactly, as partials Spark
   * merges, or a LIMIT / ORDER BY ... LIMIT per object; what it refuses stays in Spark, with one
   * log line saying why.
   */
  static final class Builder implements ScanBuilder, SupportsPushDownFilters, SupportsPushDownRequiredColumns,
      SupportsPushDownAggregates, SupportsPushDownLimit, SupportsPushDownTopN {
    private final Options options;
    private final StructType table;
    private final List<CephFiles.ObjectRef> objects;
    private StructType required;
    private Filter[] pushed = new Filter[0];
    private final List<Protocol.Node> accepted = new ArrayList<>();
    private Aggregates.Pushed aggregate;
    private TopK topK;

    Builder(Options options, StructType table, List<CephFiles.ObjectRef> objects) {
      this.options = options;
      this.table = table;
      this.objects = objects;
      this.required = table;
    }

    @Override
    public Filter[] pushFilters(Filter[] filters) {
      if (!options.mode.pushdown) return filters;
      Filters translator = new Filters(table);
      List<Filter> kept = new ArrayList<>(), taken = new ArrayList<>();
      for (Filter f : filters) {
        Protocol.Node n = translator.translate(f);
        if (n == null || !Filters.fitsBeside(accepted, n)) {
          kept.add(f);
        } else {
          taken.add(f);
          accepted.add(n);
        }
      }
      pushed = taken.toArray(new Filter[0]);
      if (broadcastable()) kept.addAll(taken);
      return kept.toArray(new Filter[0]);
    }

    /**
     * Whether Spark would broadcast this table in a join (its objects' bytes within
     * {@code spark.sql.autoBroadcastJoinThreshold}): such a table's filters, pushed, are also left
     * for Spark to check again on the few rows returned, as Spark's Parquet source leaves all of
     * them, so that dynamic pruning sees the selective filter it requires on a join's filtering
     * side and sends the matching keys to the other side's scan.
     */
    private boolean broadcastable() {
      long threshold = SQLConf.get().autoBroadcastJoinThreshold();
      return threshold > 0 && objects.stream().mapToLong(CephFiles.ObjectRef::size).sum() <= threshold;
    }

    @Override
    public Filter[] pushedFilters() {
      return pushed;
    }

    @Override
    public void pruneColumns(StructType requiredSchema) {
      required = requiredSchema;
    }

    @Override
    public boolean supportCompletePushDown(Aggregation aggregation) {
      return false;   // each object's partials: Spark merges them
    }

    @Override
    public boolean pushAggregation(Aggregation aggregation) {
      if (!options.pushesOperators()) return false;
      try {
        aggregate = Aggregates.translate(aggregation, table);
        return true;
      } catch (Aggregates.Refused e) {
        LOG.warn("[" + Native.host() + " sae-ceph] " + options.path + ": aggregating in Spark: " + e.getMessage());
        return false;
      }
    }

    @Override
    public boolean pushLimit(int limit) {   // a LIMIT beyond the protocol's bound stays in Spark
      if (!options.pushesOperators() || limit < 1 || limit > ProtocolSpec.MAX_LIMIT) return false;
      topK = new TopK(limit, List.of());
      return true;
    }

    @Override
    public boolean pushTopN(SortOrder[] orders, int limit) {
      if (!options.pushesOperators() || limit < 1 || limit > ProtocolSpec.MAX_LIMIT) return false;
      List<Protocol.SortKey> keys = new ArrayList<>();
      for (SortOrder o : orders) {
        String why = Aggregates.orderable(o.expression(), table);
        if (why != null) {
          LOG.warn("[" + Native.host() + " sae-ceph] " + options.path + ": sorting in Spark: " + why);
          return false;
        }
        keys.add(new Protocol.SortKey(((NamedReference) o.expression()).fieldNames()[0],
            o.direction() == SortDirection.DESCENDING, o.nullOrdering() == NullOrdering.NULLS_FIRST));
      }
      topK = new TopK(limit, List.copyOf(keys));
      return true;
    }

    /** Spark still sorts and limits the rows every object returned. */
    @Override
    public boolean isPartiallyPushed() {
      return true;
    }

    @Override
    public Scan build() {
      return new SaeScan(options, table, required, accepted, pushed, aggregate, topK, objects);
    }
  }
}
