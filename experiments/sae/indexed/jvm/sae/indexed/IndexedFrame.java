package sae.indexed;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.types.DataTypeUtils$;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.storage.StorageLevel;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * An indexed cache of a DataFrame in the executors' memory (the Indexed DataFrame of Uta et al.,
 * IPDPS 2022): its rows hash-partitioned on a key column into N partitions, each holding its rows
 * as UnsafeRow bytes in append-only chunks and a hash map from key to rows
 * ({@link IndexedPartition}), persisted in memory with the lineage that rebuilds a lost partition.
 *
 * <p>{@link #getRows} runs a job over the partitions its keys hash to only; {@link #join} shuffles
 * the probe side into the index's partitioning and looks each row's key up; {@link #appendRows}
 * returns a new version that shares this one's memory, which stays as it was; {@link #toDF} is
 * a DataFrame whose equality and IN filters on the key are answered through the index.
 * Every answer is the one Spark's own filter or inner join gives over the same rows.
 */
public final class IndexedFrame {
  private final SparkSession session;
  private final KeyColumn key;
  private final JavaRDD<IndexedPartition> rdd;
  private final int version;
  private final List<PartitionStats> stats;
  private final long buildNanos;

  private IndexedFrame(SparkSession session, KeyColumn key, JavaRDD<IndexedPartition> rdd, int version,
                       long start) {
    this.session = session;
    this.key = key;
    this.rdd = rdd.persist(StorageLevel.MEMORY_ONLY());
    this.rdd.setName("sae.indexed " + key.name + " v" + version);
    this.version = version;
    this.stats = rdd.map(IndexedPartition::stats).collect();   // builds and caches every partition
    this.buildNanos = System.nanoTime() - start;
  }

  /** Index ``df`` on ``column`` in as many partitions as the session's default parallelism. */
  public static IndexedFrame create(Dataset<Row> df, String column) {
    return create(df, column, classic(df, "createIndex").sparkSession().sparkContext().defaultParallelism());
  }

  /** Index ``df`` on ``column`` in ``partitions`` partitions. */
  public static IndexedFrame create(Dataset<Row> df, String column, int partitions) {
    long start = System.nanoTime();
    SparkSession session = classic(df, "createIndex").sparkSession();
    if (partitions < 1) {
      throw new IllegalArgumentException("createIndex: partitions must be 1 or more, not " + partitions);
    }
    StructType schema = df.schema();
    KeyColumn key = new KeyColumn(schema, field(schema, column, "createIndex").name(), partitions);
    JavaRDD<IndexedPartition> rdd = exchange(session, df, quoted(key.name), partitions, "createIndex")
        .mapPartitionsWithIndex((id, rows) -> one(IndexedPartition.empty(id, key).append(rows, key)), true);
    return new IndexedFrame(session, key, rdd, 0, start);
  }

  // --- lookups ---

  /** The rows whose key is one of ``keys`` (a key given twice counts once; a null key or one
   * outside the column's range matches nothing), as a DataFrame of the source's schema held on
   * the driver. Runs one job over the partitions these keys hash to and no other. */
  public Dataset<Row> getRows(Collection<?> keys) {
    Object[][] byPartition = byPartition(keys, "getRows");
    int[] touched = touched(byPartition);
    List<UnsafeRow> rows = new ArrayList<>();
    if (touched.length > 0) {
      JavaRDD<byte[]> found = rdd.map(p -> pack(p.lookup(byPartition[p.id])));
      for (List<byte[]> part : found.collectPartitions(touched)) {
        for (byte[] packed : part) unpack(packed, key.schema.size(), rows);
      }
    }
    @SuppressWarnings({"unchecked", "rawtypes"})
    LocalRelation local = new LocalRelation((scala.collection.immutable.Seq) DataTypeUtils$.MODULE$.toAttributes(
        key.schema), (scala.collection.immutable.Seq) CollectionConverters.asScala(rows).toSeq(), false,
        Option.empty());
    return org.apache.spark.sql.classic.Dataset.ofRows(session, local);
  }

  /** {@link #getRows(Collection)} of the keys given. */
  public Dataset<Row> getRows(Object... keys) {
    return getRows(Arrays.asList(keys));
  }

  /** {@link #getRows(Collection)} of keys packed in one array (one call from Python, however many
   * keys): internal values (days for dates, microseconds for times) as 8-byte little-endian longs
   * for an integral key; for a string key each key's UTF-8 length as a 4-byte little-endian int,
   * then its bytes. */
  public Dataset<Row> getRowsPacked(byte[] keys) {
    return getRows(unpackKeys(keys));
  }

  /** The partitions a lookup of ``keys`` touches, in order. */
  public int[] partitionsOf(Collection<?> keys) {
    return touched(byPartition(keys, "partitionsOf"));
  }

  /** {@link #partitionsOf} of keys packed as for {@link #getRowsPacked}. */
  public int[] partitionsOfPacked(byte[] keys) {
    return partitionsOf(unpackKeys(keys));
  }

  private List<Object> unpackKeys(byte[] packed) {
    ByteBuffer in = ByteBuffer.wrap(packed).order(ByteOrder.LITTLE_ENDIAN);
    List<Object> out = new ArrayList<>();
    while (in.hasRemaining()) {
      if (key.string) {
        int length = in.getInt();
        out.add(UTF8String.fromBytes(packed, in.position(), length));
        in.position(in.position() + length);
      } else {
        out.add(in.getLong());
      }
    }
    return out;
  }

  /** Distinct internal keys by the partition they hash to (null: none there). */
  Object[][] byPartition(Collection<?> keys, String what) {
    Set<Object> distinct = new LinkedHashSet<>();
    for (Object k : keys) {
      Object internal = key.internal(k, what);
      if (internal != null) distinct.add(internal);
    }
    List<List<Object>> lists = new ArrayList<>(Collections.nCopies(key.numPartitions, null));
    for (Object k : distinct) {
      int p = k instanceof Long ? key.partitionOf((Long) k) : key.partitionOf((UTF8String) k);
      if (lists.get(p) == null) lists.set(p, new ArrayList<>());
      lists.get(p).add(k);
    }
    Object[][] out = new Object[key.numPartitions][];
    for (int p = 0; p < out.length; p++) out[p] = lists.get(p) == null ? null : lists.get(p).toArray();
    return out;
  }

  static int[] touched(Object[][] byPartition) {
    int n = 0;
    for (Object[] ks : byPartition) n += ks == null ? 0 : 1;
    int[] out = new int[n];
    for (int p = 0, i = 0; p < byPartition.length; p++) if (byPartition[p] != null) out[i++] = p;
    return out;
  }

  /** Rows as one array: each a 4-byte size, then its bytes. */
  private static byte[] pack(Iterator<UnsafeRow> rows) {
    byte[] out = new byte[64];
    int used = 0;
    while (rows.hasNext()) {
      UnsafeRow r = rows.next();
      int size = r.getSizeInBytes();
      if (used + 4 + size > out.length) out = Arrays.copyOf(out, Math.max(out.length * 2, used + 4 + size));
      Platform.putInt(out, Platform.BYTE_ARRAY_OFFSET + used, size);
      r.writeToMemory(out, Platform.BYTE_ARRAY_OFFSET + used + 4);
      used += 4 + size;
    }
    return Arrays.copyOf(out, used);
  }

  private static void unpack(byte[] packed, int numFields, List<UnsafeRow> into) {
    for (int at = 0; at < packed.length; ) {
      int size = Platform.getInt(packed, Platform.BYTE_ARRAY_OFFSET + at);
      UnsafeRow r = new UnsafeRow(numFields);
      r.pointTo(packed, Platform.BYTE_ARRAY_OFFSET + at + 4, size);
      into.add(r);
      at += 4 + size;
    }
  }

  // --- join ---

  /**
   * The inner equi-join of this index with ``probe`` on ``column`` = the key: the index's columns,
   * then the probe's, as Spark's {@code index.join(probe, key == column, "inner")} gives. The probe
   * side (its rows with a key that can match) is shuffled into the index's partitioning and each
   * of its rows looks its key up; the index's rows do not move. The probe's shuffle runs here
   * (adaptive execution runs an exchange's map stage when its RDD is made), the lookups when the
   * answer is read.
   */
  public Dataset<Row> join(Dataset<Row> probe, String column) {
    StructField f = field(probe.schema(), column, "join");
    if (!key.comparable(f.dataType())) {
      throw new IllegalArgumentException("join: probe column " + f.name() + " is " + f.dataType().simpleString()
          + ", the index key " + key.name + " is " + key.type.simpleString() + "; cast it to "
          + key.type.simpleString() + " first");
    }
    Column c = quoted(f.name());
    Dataset<Row> matchable = probe.filter(KeyColumn.integral(key.type)
        ? c.isNotNull().and(c.between(key.min(), key.max())) : c.isNotNull());
    JavaRDD<InternalRow> shuffled = exchange(session, matchable, c.cast(key.type), key.numPartitions, "join");
    StructType out = new StructType(concat(key.schema.fields(), probe.schema().fields()));
    int ordinal = probe.schema().fieldIndex(f.name());
    DataType type = f.dataType();
    JavaRDD<InternalRow> joined = rdd.zipPartitions(shuffled,
        (parts, rows) -> parts.next().join(rows, ordinal, type, out));
    return session.internalCreateDataFrame(joined.rdd(), out, false);
  }

  // --- versions ---

  /**
   * A new version of this index with ``rows`` added (its columns matched by name to the index's;
   * the same types). Only the new rows are shuffled and indexed; this version stays readable and
   * unchanged, and shares its memory with the new one.
   */
  public IndexedFrame appendRows(Dataset<Row> rows) {
    long start = System.nanoTime();
    Column[] columns = new Column[key.schema.size()];
    StructField[] merged = new StructField[columns.length];
    for (int i = 0; i < columns.length; i++) {
      StructField want = key.schema.fields()[i];
      StructField got = field(rows.schema(), want.name(), "appendRows");
      if (!got.dataType().equals(want.dataType())) {
        throw new IllegalArgumentException("appendRows: column " + got.name() + " is "
            + got.dataType().simpleString() + ", the index has " + want.dataType().simpleString());
      }
      columns[i] = quoted(got.name());
      merged[i] = new StructField(want.name(), want.dataType(), want.nullable() || got.nullable(), want.metadata());
    }
    KeyColumn next = key.withSchema(new StructType(merged));
    JavaRDD<InternalRow> shuffled = exchange(session, rows.select(columns), quoted(key.name), key.numPartitions,
        "appendRows");
    JavaRDD<IndexedPartition> appended = rdd.zipPartitions(shuffled,
        (parts, more) -> one(parts.next().append(more, next)));
    return new IndexedFrame(session, next, appended, version + 1, start);
  }

  // --- the index as a DataFrame ---

  /** A DataFrame of this version's rows whose filters on the key (=, <=> a value, IN, and AND or
   * OR of them) read only the partitions and rows of those keys; other queries scan it all. */
  public Dataset<Row> toDF() {
    return session.baseRelationToDataFrame(new IndexedRelation(this));
  }

  // --- what it holds ---

  /** Per partition: rows, keys, bytes, build time. */
  public List<PartitionStats> partitionStats() {
    return Collections.unmodifiableList(stats);
  }

  /** {@link #partitionStats} summed. */
  public PartitionStats memory() {
    PartitionStats sum = PartitionStats.zero();
    for (PartitionStats s : stats) sum = sum.plus(s);
    return sum;
  }

  /** Wall time of building this version (create, or append) on the driver, its job included. */
  public long buildNanos() { return buildNanos; }
  public int version() { return version; }
  public int numPartitions() { return key.numPartitions; }
  public String keyColumn() { return key.name; }
  public StructType schema() { return key.schema; }
  /** The cached RDD of this version (one {@link IndexedPartition} per partition). */
  public JavaRDD<?> rdd() { return rdd; }

  /** Drop this version's cached partitions (a newer version keeps the memory it shares). */
  public void unpersist() {
    rdd.unpersist(true);
  }

  JavaRDD<IndexedPartition> partitions() { return rdd; }
  SparkSession session() { return session; }
  KeyColumn key() { return key; }

  // --- helpers ---

  private static org.apache.spark.sql.classic.Dataset<Row> classic(Dataset<Row> df, String what) {
    if (!(df instanceof org.apache.spark.sql.classic.Dataset)) {
      throw new IllegalArgumentException(what + ": needs a DataFrame of a classic SparkSession, not Spark Connect");
    }
    return (org.apache.spark.sql.classic.Dataset<Row>) df;
  }

  private static StructField field(StructType schema, String name, String what) {
    for (StructField f : schema.fields()) if (f.name().equals(name)) return f;
    StructField found = null;
    for (StructField f : schema.fields()) {
      if (f.name().equalsIgnoreCase(name)) {
        if (found != null) {
          throw new IllegalArgumentException(what + ": column " + name + " is ambiguous; name it exactly");
        }
        found = f;
      }
    }
    if (found == null) {
      throw new IllegalArgumentException(what + ": no column " + name + "; the columns are "
          + String.join(", ", schema.fieldNames()));
    }
    return found;
  }

  static Column quoted(String name) {
    return functions.col("`" + name.replace("`", "``") + "`");
  }

  /** ``df`` hash-partitioned on ``partitionKey`` into ``n`` partitions, as internal rows. */
  private static JavaRDD<InternalRow> exchange(SparkSession session, Dataset<Row> df, Column partitionKey, int n,
                                               String what) {
    JavaRDD<InternalRow> rows = classic(df.repartition(n, partitionKey), what).queryExecution().toRdd().toJavaRDD();
    int got = rows.getNumPartitions();
    if (got == 0) {   // the planner found the input empty
      return new JavaSparkContext(session.sparkContext()).parallelize(Collections.<InternalRow>emptyList(), n);
    }
    if (got != n) {
      throw new IllegalStateException(what + ": Spark's exchange gave " + got + " partitions, not " + n);
    }
    return rows;
  }

  private static <T> Iterator<T> one(T item) {
    return Collections.singletonList(item).iterator();
  }

  private static StructField[] concat(StructField[] a, StructField[] b) {
    StructField[] out = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
