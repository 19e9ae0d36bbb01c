package sae.connector;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.parquet.VectorizedParquetRecordReader;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * A task's reader: keeps up to {@code calls_in_flight} asynchronous {@code sae.scan} calls on its
 * objects in flight, and hands Spark each reply's Arrow batches as {@link ArrowColumnVector}s,
 * in object order, summing each reply's stats into the task's {@link ScanMetrics}. A whole-object
 * reply (every column asked for, every row passed: the class sent the Parquet file itself) is
 * decoded by Spark's own Parquet reader. In mode auto an object may instead be read whole and
 * scanned here by the class's own scan ({@link LocalScan}), whose reply is read alike, and the
 * objects kept back at the end of the list ({@link Pushback#tail}) are read between the others'
 * replies, whenever the next one has not arrived. Replies live in librados (or the scan
 * library's) memory until their stream is read; everything is freed when the task ends
 * ({@link #close}).
 */
final class ObjectsReader implements PartitionReader<ColumnarBatch> {
  /** Where whole objects wait for Spark's Parquet reader, which reads files: memory when there is a tmpfs. */
  private static final Path SPOOL = Files.isWritable(Path.of("/dev/shm")) ? Path.of("/dev/shm")
      : Path.of(System.getProperty("java.io.tmpdir"));
  private final Factory f;
  private final List<CephFiles.ObjectRef> objects;
  private final ArrayDeque<Request> inFlight = new ArrayDeque<>();
  private final BufferAllocator allocator;
  private final Rados rados;
  private int submitted;
  /** Mode auto: objects from here to the end are the task's tail, read whole while pushed replies are awaited. */
  private final int tailStart;
  /** The tail object read next, its read in flight (null: none left), and the index of the one after it. */
  private Request tailRead;
  private int tailNext;
  /** Whether a tail object was scanned since the last pushed reply was read (that reply's wait then says little). */
  private boolean afterTail;
  private Request request;
  /** The reply of the class's scan run here on {@link #request}'s object, read whole (mode auto). */
  private LocalScan local;
  /** nanoTime when the reader began waiting for {@link #request}'s reply. */
  private long requestStarted;
  /** The OSD's reported scan work on {@link #request} (mode auto's saving; 0: read whole). */
  private long requestOsdWork;
  /** How long the reader waited for {@link #request}'s reply (mode auto's idle time, when pushed). */
  private long requestWait;
  /** Mode auto's choice for this query's shape (null: none to make, or forced by option pushback). */
  private final Pushback pushback;
  /** Whether the task's word on the storage side's CPU was told ({@link #tellVerdict()}, once). */
  private boolean told;
  private ArrowStreamReader stream;
  private VectorSchemaRoot root;
  private ColumnarBatch batch;
  private Column[] columns;
  private VectorizedParquetRecordReader parquet;
  private Path spooled;
  private final long[] metrics = new long[ScanMetrics.NAMES.size()];
  /** nanoTime of the task's first read, and of the last batch handed to Spark (0: none waiting). */
  private long firstRead, handedOver;

  private ObjectsReader(Factory f, List<CephFiles.ObjectRef> objects) throws IOException {
    this.f = f;
    this.objects = objects;
    this.rados = Rados.connect(f.options.cephConf, f.options.cephUser, f.options.timeout);
    this.allocator = SaeCephProvider.ROOT.newChildAllocator("sae-ceph task", 0, Long.MAX_VALUE);
    this.pushback = f.options.costModel() ? Pushback.of(f.shape) : null;
    metrics[ScanMetrics.TASKS] = 1;
    this.tailStart = objects.size() - kept();
    this.tailNext = tailStart;
  }

  /**
   * One object's call in flight: a scan pushed into its OSD, or (mode auto) a read of the whole
   * object, in the list's order or as one of the task's tail.
   */
  private record Request(Rados.Call call, boolean pushed, long bytes, int index, boolean tail) {}

  /** Keeps the next tail object's read and up to calls_in_flight of the others' calls in flight, in that order. */
  private void fill() throws IOException {
    if (tailRead == null && tailNext < objects.size()) tailRead = read(tailNext++, true);
    while (submitted < tailStart && inFlight.size() < f.options.callsInFlight) {
      int i = submitted++;
      inFlight.add(push() ? push(i) : read(i, false));
    }
  }

  private Request push(int i) throws IOException {
    CephFiles.ObjectRef o = objects.get(i);
    return new Request(rados.submit(o.pool(), o.oid(), "scan", f.request(o.size())), true, o.size(), i, false);
  }

  private Request read(int i, boolean tail) throws IOException {
    CephFiles.ObjectRef o = objects.get(i);
    return new Request(rados.read(o.pool(), o.oid(), o.size()), false, o.size(), i, tail);
  }

  /** The request to read next: the tail's while the next pushed reply is not there yet, else the next in order. */
  private Request nextRequest() {
    if (tailRead == null || (!inFlight.isEmpty() && inFlight.peek().call().ready())) return inFlight.poll();
    Request r = tailRead;
    tailRead = null;
    return r;
  }

  /**
   * Whether to push the next object before the tail into its OSD: as option pushback forces it;
   * in mode auto, always when the task keeps objects back (the tail is then the model's split of
   * the task between the two ways, and an object read whole in turn would only be waited for),
   * else the model's choice per object.
   */
  private boolean push() {
    if (pushback == null) return !f.options.pushback.equals("always");
    return tailStart < objects.size() || pushback.push();
  }

  /** How many objects to keep back at the end of the list: mode auto's choice, or as option pushback forces it. */
  private int kept() {
    if (pushback != null) return pushback.tail(objects.stream().mapToLong(CephFiles.ObjectRef::size).toArray());
    return f.options.pushback.equals("half") ? objects.size() / 2 : 0;
  }

  /**
   * The next batch. Times the task's reading (ScanMetrics' client phases): Spark's work since the
   * last batch was handed over, then requests, waits and decoding until the next one.
   */
  @Override
  public boolean next() throws IOException {
    long entered = System.nanoTime();
    if (firstRead == 0) firstRead = entered;
    if (handedOver != 0) metrics[ScanMetrics.SPARK_NS] += entered - handedOver;
    boolean more = advance();
    long left = System.nanoTime();
    metrics[ScanMetrics.READER_NS] = left - firstRead;
    handedOver = more ? left : 0;
    return more;
  }

  private boolean advance() throws IOException {
    while (true) {
      long t = System.nanoTime();
      if (parquet != null) {   // decoding counts until the batch is ready or the reply freed
        boolean more = parquet.nextBatch();
        if (more) batch = parquet.resultBatch();
        else closeStream();
        metrics[ScanMetrics.DECODE_NS] += System.nanoTime() - t;
        if (more) {
          if (batch.numRows() == 0) continue;
          return true;
        }
      }
      if (stream != null) {
        boolean more = stream.loadNextBatch();
        int rows = more ? root.getRowCount() : 0;
        if (rows > 0) for (Column c : columns) c.loaded();
        else if (!more) closeStream();
        metrics[ScanMetrics.DECODE_NS] += System.nanoTime() - t;
        if (more) {
          if (rows == 0) continue;
          batch.setNumRows(rows);
          return true;
        }
      }
      t = System.nanoTime();
      fill();
      metrics[ScanMetrics.REQUEST_NS] += System.nanoTime() - t;
      measured(t);
      request = nextRequest();
      if (request == null) {
        tellVerdict();
        return false;
      }
      requestStarted = t;
      requestOsdWork = 0;
      t = System.nanoTime();
      fill();
      long waited = System.nanoTime();
      metrics[ScanMetrics.REQUEST_NS] += waited - t;
      ByteBuffer reply = request.call().await();
      long arrived = System.nanoTime();
      metrics[ScanMetrics.WAIT_NS] += arrived - waited;
      requestWait = arrived - waited;
      if (request.pushed()) {
        metrics[ScanMetrics.CALLS]++;
        open(reply, true);
      } else {
        metrics[ScanMetrics.READ_WHOLE]++;
        if (request.tail()) metrics[ScanMetrics.READ_ALONGSIDE]++;
        local = LocalScan.run(f.options.scanLibrary, reply, f.localRequest(request.bytes()));
        metrics[ScanMetrics.LOCAL_SCAN_NS] += System.nanoTime() - arrived;
        request.call().close();   // the object, now scanned
        open(local.reply(), false);
      }
      metrics[ScanMetrics.DECODE_NS] += System.nanoTime() - arrived;
    }
  }

  /** Mode auto: what the object read last cost the reading thread, from its wait until {@code now} (once). */
  private void measured(long now) {
    if (pushback == null || request == null || requestStarted == 0) return;
    if (request.tail()) {
      pushback.measuredTail(now - requestStarted, request.bytes());
    } else if (!(request.pushed() && afterTail)) {   // a pushed reply read after a tail object waited less than it took
      pushback.measured(request.pushed(), now - requestStarted, request.bytes(), requestOsdWork);
      if (request.pushed()) pushback.waited(requestWait, request.bytes());
    }
    if (request.tail() || request.pushed()) afterTail = request.tail();
    requestStarted = 0;
  }

  /**
   * Mode auto, at the task's end: whether its model found the storage side short of CPU, told to
   * the driver ({@link CpuVerdict}) and counted in the task's metrics.
   */
  private void tellVerdict() {
    if (pushback == null || told) return;
    told = true;
    Boolean shortOfCpu = pushback.shortOfCpu();
    f.verdict.tell(shortOfCpu);
    if (Boolean.TRUE.equals(shortOfCpu)) metrics[ScanMetrics.TASKS_SHORT_OF_CPU] = 1;
  }

  /** A reply's stat at {@code index}, 0 where the reply reports fewer. */
  private static long stat(long[] stats, int index) {
    return index < stats.length ? stats[index] : 0;
  }

  private String where() {
    CephFiles.ObjectRef o = objects.get(request.index());
    return o.path() + " (object " + o.oid() + ")";
  }

  /**
   * A scan's reply: from the object's OSD ({@code fromOsd}: its stats are the OSD's work), or from
   * the scan run here on the object read whole.
   */
  private void open(ByteBuffer reply, boolean fromOsd) throws IOException {
    Protocol.ScanException err = Protocol.error(reply);
    if (err != null) {
      throw new Protocol.ScanException(err.errno, "[" + Native.host() + " sae-ceph] " + where() + ": "
          + (fromOsd ? "" : "scanned here, read whole: ") + err.getMessage());
    }
    Protocol.Reply r;
    try {
      r = Protocol.reply(reply);
    } catch (IOException e) {
      throw new IOException("[" + Native.host() + " sae-ceph] " + where() + ": " + e.getMessage(), e);
    }
    long[] stats = r.stats();
    if (fromOsd) for (int i = 0; i < stats.length; i++) metrics[i] += stats[i];
    if (fromOsd && pushback != null) {   // mode auto's saving
      long scan = 0;
      for (int i : ScanMetrics.SCAN_WORK_NS) scan += stat(stats, i);
      long wall = stat(stats, ScanMetrics.WALL_NS), cpu = stat(stats, ScanMetrics.TOTAL_NS);
      requestOsdWork = Pushback.osdWork(wall, cpu, scan, stat(stats, ScanMetrics.OWN_CALLS_NS));
      pushback.stretched(wall, cpu, stat(stats, ScanMetrics.ALL_CALLS_NS));
    }
    if (r.body() == Protocol.BODY_PARQUET) {
      metrics[ScanMetrics.WHOLE_OBJECTS]++;
      openParquet(r.stream());
      return;
    }
    stream = new ArrowStreamReader(new BufferChannel(r.stream()), allocator, ArrowTypes.CODECS);
    root = stream.getVectorSchemaRoot();
    StructType schema = f.schema;
    columns = new Column[schema.length()];
    for (int i = 0; i < columns.length; i++) {
      StructField want = schema.fields()[i];
      FieldVector v = root.getVector(want.name());
      if (v == null) throw new IOException("[" + Native.host() + " sae-ceph] " + where() + ": no column " + want.name());
      DataType got = ArrowTypes.toSpark(v.getField(), where());
      if (!got.equals(want.dataType())) {
        throw new IOException("[" + Native.host() + " sae-ceph] " + where() + ": column " + want.name() + " is "
            + got.simpleString() + " but the dataset's first file has " + want.dataType().simpleString()
            + "; every file of a dataset needs the same schema");
      }
      columns[i] = new Column(v);
    }
    batch = new ColumnarBatch(columns);
  }

  /** Spark's Parquet reader over a whole object, spooled to a file (it reads files) until read. */
  private void openParquet(ByteBuffer data) throws IOException {
    spooled = Files.createTempFile(SPOOL, "sae-ceph-", ".parquet");
    try (FileChannel out = FileChannel.open(spooled, StandardOpenOption.WRITE)) {
      while (data.hasRemaining()) out.write(data);
    }
    parquet = new VectorizedParquetRecordReader(f.offHeap, f.parquetBatchRows);
    try {
      parquet.initialize(spooled.toString(), List.of(f.schema.fieldNames()));
    } catch (UnsupportedOperationException e) {
      throw new IOException("[" + Native.host() + " sae-ceph] " + where() + ": Spark cannot read the object: "
          + e.getMessage(), e);
    }
    parquet.resultBatch();   // allocates the batch nextBatch fills
  }

  private void closeStream() throws IOException {
    try {
      if (parquet != null) parquet.close();
    } finally {
      parquet = null;
      batch = null;
      if (spooled != null) Files.deleteIfExists(spooled);
      spooled = null;
    }
    if (stream != null) {
      stream.close();   // frees the vectors (and root)
      stream = null;
      root = null;
      batch = null;
      columns = null;
    }
    if (request != null) {
      request.call().close();   // frees the reply
    }
    if (local != null) {
      local.close();
      local = null;
    }
  }

  @Override
  public ColumnarBatch get() {
    return batch;
  }

  @Override
  public CustomTaskMetric[] currentMetricsValues() {
    return ScanMetrics.task(metrics);
  }

  @Override
  public void close() throws IOException {
    try {
      closeStream();
    } finally {
      while (!inFlight.isEmpty()) inFlight.poll().call().close();
      if (tailRead != null) tailRead.call().close();
      allocator.close();
    }
  }

  /**
   * An ArrowColumnVector that answers isNullAt without asking the vector when the batch has no
   * nulls: Spark's generated code asks before every value, and the vector's isNull is a call
   * through ValueVector that the JIT cannot inline across column types (measured: a third of the
   * executor samples at 100 % selectivity before this).
   */
  private static final class Column extends ArrowColumnVector {
    private boolean nulls = true;

    Column(FieldVector v) {
      super(v);
    }

    void loaded() {
      nulls = getValueVector().getNullCount() > 0;
    }

    @Override
    public boolean isNullAt(int rowId) {
      return nulls && super.isNullAt(rowId);
    }
  }

  /** A channel over the librados reply (ArrowStreamReader copies each message out of it). */
  private static final class BufferChannel implements ReadableByteChannel {
    private final ByteBuffer src;

    BufferChannel(ByteBuffer src) {
      this.src = src.duplicate();
    }

    @Override
    public int read(ByteBuffer dst) {
      if (!src.hasRemaining()) return -1;
      int n = Math.min(dst.remaining(), src.remaining());
      dst.put(src.slice(src.position(), n));
      src.position(src.position() + n);
      return n;
    }

    @Override
    public boolean isOpen() {
      return true;
    }

    @Override
    public void close() {}
  }

  /**
   * Serialized to executors: options, the output schema, the request's columns, filter,
   * aggregation and top-k, and the query's shape (what mode auto's choice is kept per).
   */
  static final class Factory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    final Options options;
    final StructType schema;
    final List<String> requested;
    final Protocol.Node filter;
    final Aggregates.Pushed aggregate;
    final SaeScan.TopK topK;
    final String shape;
    /** Mode auto's cost model: its tasks' word to the driver on the storage side's CPU (else null). */
    final CpuVerdict verdict;
    /** Rows per batch of Spark's own Parquet reader (whole objects), as vanilla reads them. */
    final int parquetBatchRows;
    /** The csv section's schema when the objects are CSV files (the table's columns), else null. */
    final byte[] csv;
    final boolean offHeap;
    /** The query's calls' client id (protocol 5): each reply says how many of them the OSD ran beside it. */
    final long client = java.util.concurrent.ThreadLocalRandom.current().nextLong(1, Long.MAX_VALUE);

    Factory(Options options, StructType schema, List<String> requested, Protocol.Node filter,
        Aggregates.Pushed aggregate, SaeScan.TopK topK, String shape, CpuVerdict verdict, byte[] csv) {
      this.csv = csv;
      this.verdict = verdict;
      this.options = options;
      this.schema = schema;
      this.requested = List.copyOf(requested);
      this.filter = filter;
      this.aggregate = aggregate;
      this.topK = topK;
      this.shape = shape;
      SQLConf conf = SQLConf.get();   // the driver's session conf, as Spark's Parquet reader factory takes it
      this.parquetBatchRows = conf.parquetVectorizedReaderBatchSize();
      this.offHeap = conf.offHeapColumnVectorEnabled();
    }

    /**
     * The scan request for an object of {@code size} bytes. An object whose every row passes, asked
     * for every column, may come back as stored (option whole_objects; never in no-offload, the
     * thesis's baseline, where the OSD decodes and re-encodes every row and column).
     */
    byte[] request(long size) {
      boolean whole = options.wholeObjects && options.mode.pushdown && aggregate == null && topK == null;
      return request(size, options.compression, whole);
    }

    /** The scan of an object of {@code size} bytes read whole, run here: nothing to compress or send as stored. */
    byte[] localRequest(long size) {
      return request(size, "none", false);
    }

    private byte[] request(long size, String codec, boolean whole) {
      int flags = Protocol.FLAG_ERRORS_IN_BAND | (whole ? Protocol.FLAG_WHOLE_OBJECT : 0)
          | (options.mode.index ? Protocol.FLAG_INDEX : 0);
      long maxReply = options.replyLimit(size);
      byte[] request;
      if (aggregate != null) {
        request = Protocol.request(requested, filter, codec, options.batchRows, maxReply, flags,
            aggregate.groupBy(), aggregate.functions());
      } else if (topK != null) {
        request = Protocol.request(requested, filter, codec, options.batchRows, maxReply, flags,
            topK.limit(), topK.orderBy());
      } else {
        request = Protocol.request(requested, filter, codec, options.batchRows, maxReply, flags);
      }
      return Protocol.client(csv == null ? request : Protocol.csv(request, csv), client);
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
      return true;
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
      try {
        return new ObjectsReader(this, ((SaeScan.ObjectsPartition) partition).objects());
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      throw new UnsupportedOperationException("sae-ceph reads columnar batches only");
    }
  }
}
