package sae.connector;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * One query's scan: the filters the class accepted, the columns the query uses, and partitions of
 * objects packed by bytes as Spark packs files ({@code spark.sql.files.maxPartitionBytes},
 * {@code openCostInBytes}, default parallelism).
 */
final class SaeScan implements Scan, Batch {
  private final Options options;
  private final StructType readSchema;
  private final List<String> requested;
  private final Protocol.Node filter;
  private final Filter[] pushed;
  private final List<CephFiles.ObjectRef> objects;

  private SaeScan(Options options, StructType table, StructType readSchema, Protocol.Node filter, Filter[] pushed,
      List<CephFiles.ObjectRef> objects) {
    this.options = options;
    this.objects = objects;
    this.readSchema = readSchema;
    this.filter = filter;
    this.pushed = pushed;
    if (!options.mode.pushdown) {
      requested = List.of();   // every column: the thesis's no-offload
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
    return Options.FORMAT + " " + options.path + " mode=" + options.mode.option + " compression="
        + options.compression + " PushedFilters: [" + Arrays.stream(pushed).map(Filter::toString)
        .collect(Collectors.joining(", ")) + "] OsdColumns: " + (requested.isEmpty() ? "*" : requested);
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
    List<InputPartition> out = new ArrayList<>();
    if (options.objectsPerPartition > 0) {
      for (int i = 0; i < objects.size(); i += options.objectsPerPartition) {
        out.add(new ObjectsPartition(objects.subList(i, Math.min(objects.size(), i + options.objectsPerPartition))));
      }
      return out.toArray(new InputPartition[0]);
    }
    SQLConf conf = SQLConf.get();
    long open = conf.filesOpenCostInBytes();
    int parallelism = conf.filesMinPartitionNum().isDefined()
        ? ((Number) conf.filesMinPartitionNum().get()).intValue()
        : SparkSession.active().sparkContext().defaultParallelism();
    long total = objects.stream().mapToLong(o -> o.size() + open).sum();
    long maxBytes = Math.min(conf.filesMaxPartitionBytes(), Math.max(open, total / Math.max(1, parallelism)));
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
    return new ObjectsReader.Factory(options, readSchema, requested, filter);
  }

  /** The objects one task scans. */
  record ObjectsPartition(List<CephFiles.ObjectRef> objects) implements InputPartition {
    ObjectsPartition {
      objects = List.copyOf(objects);
    }
  }

  /** Accepts the filters the class runs exactly (modes that push down) and the columns the query uses. */
  static final class Builder implements ScanBuilder, SupportsPushDownFilters, SupportsPushDownRequiredColumns {
    private final Options options;
    private final StructType table;
    private final List<CephFiles.ObjectRef> objects;
    private StructType required;
    private Filter[] pushed = new Filter[0];
    private final List<Protocol.Node> accepted = new ArrayList<>();

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
        if (n == null) {
          kept.add(f);
        } else {
          taken.add(f);
          accepted.add(n);
        }
      }
      pushed = taken.toArray(new Filter[0]);
      return kept.toArray(new Filter[0]);
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
    public Scan build() {
      return new SaeScan(options, table, required, Filters.all(accepted), pushed, objects);
    }
  }
}
