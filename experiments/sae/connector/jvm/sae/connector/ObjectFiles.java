package sae.connector;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.io.OutputFile;
import org.apache.parquet.io.PositionOutputStream;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.datasources.parquet.ParquetOptions;
import org.apache.spark.sql.execution.datasources.parquet.ParquetUtils;
import org.apache.spark.sql.execution.datasources.parquet.ParquetWriteSupport;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * Rows into single-row-group Parquet files of at most one object each, written by Spark's own
 * Parquet write support (parquet-hadoop's ParquetWriter, {@link ParquetWriteSupport}) into memory
 * and handed whole to a {@link Sink}; a file is closed before its estimated size would leave the
 * object.
 */
final class ObjectFiles implements AutoCloseable {
  /** Receives a finished file: its bytes (the first {@code len} of {@code data}). */
  interface Sink {
    void write(String name, byte[] data, int len) throws IOException;
  }

  /** The name of a writer's {@code n}-th file (from 0). */
  interface Names {
    String name(int n);
  }

  private final Map<String, String> conf;
  private final int objectSize;
  /**
   * The most a file may come to: an eighth of the object and 64 KiB below it, room for what
   * Parquet's size estimate leaves out (the dictionaries, each capped at 1/16 of the object, below,
   * and the footer) and for the data's own variation.
   */
  private final long target;
  /**
   * The estimate at which a file is closed: {@link #target} plus the least a full file's estimate
   * exceeded its bytes (the estimate counts the open pages uncompressed, about the same bytes in
   * every file).
   */
  private long limit;
  private final Names names;
  private final Sink sink;
  private final List<Manifest.Entry> written = new ArrayList<>();
  private Buffer buffer;
  private ParquetWriter<InternalRow> writer;
  private long rows;
  private long slack = Long.MAX_VALUE;

  /**
   * @param conf Spark's Parquet write settings ({@link #writeConf})
   * @param objectSize the object size: no file exceeds it
   */
  ObjectFiles(Map<String, String> conf, int objectSize, Names names, Sink sink) {
    this.conf = conf;
    this.objectSize = objectSize;
    this.target = objectSize - objectSize / 8 - (64 << 10);
    this.limit = target;
    this.names = names;
    this.sink = sink;
  }

  /**
   * Spark's Parquet write settings for {@code schema} (its session's codec and options, as Spark's
   * own Parquet writes take them), timestamps as INT64 microseconds (the OSD's Arrow reads them as
   * the dataset's); IllegalArgumentException naming a column Parquet cannot store or the connector cannot read back.
   */
  static Map<String, String> writeConf(StructType schema) throws IOException {
    ParquetFileFormat format = new ParquetFileFormat();
    for (StructField f : schema.fields()) {
      if (!format.supportDataType(f.dataType()) || !ArrowTypes.readsBack(f.dataType())) {
        throw new IllegalArgumentException(Options.FORMAT + ": column " + f.name() + " is "
            + f.dataType().simpleString() + ", which the connector cannot read back from Parquet (it reads boolean, "
            + "integer, float, double, string, binary, decimal, date, timestamp and void columns); cast or drop it "
            + "before writing");
      }
    }
    SQLConf sql = SQLConf.get();
    Job job = Job.getInstance(new Configuration(false));
    ParquetUtils.prepareWrite(sql, job, schema,
        new ParquetOptions(scala.collection.immutable.Map$.MODULE$.<String, String>empty(), sql));
    Map<String, String> out = new HashMap<>();
    job.getConfiguration().forEach(e -> out.put(e.getKey(), e.getValue()));
    out.put(SQLConf.PARQUET_OUTPUT_TIMESTAMP_TYPE().key(), "TIMESTAMP_MICROS");
    return out;
  }

  void write(InternalRow row) throws IOException {
    if (writer == null) open();
    writer.write(row);
    if (++rows % 64 == 0 && writer.getDataSize() > limit) finish();
  }

  /** Closes the current file; the files written, in order. */
  List<Manifest.Entry> finish() throws IOException {
    if (writer != null) {
      long estimate = writer.getDataSize();
      writer.close();
      writer = null;
      String name = names.name(written.size());
      if (buffer.len > objectSize) {
        throw new IOException("[" + Native.host() + " sae-ceph] " + name + " came to " + buffer.len
            + " bytes, more than its object's " + objectSize + "; write with a larger object_size");
      }
      sink.write(name, buffer.data, buffer.len);
      written.add(new Manifest.Entry(name, rows, buffer.len));
      if (estimate >= limit) {   // a full file: the next ones fill to the target by its slack
        slack = Math.min(slack, Math.max(0, estimate - buffer.len));
        limit = target + slack;
      }
      buffer = null;
      rows = 0;
    }
    return List.copyOf(written);
  }

  private void open() throws IOException {
    Configuration c = new Configuration(false);
    conf.forEach(c::set);
    buffer = new Buffer(objectSize);
    int columns = Math.max(1, ((StructType) DataType.fromJson(conf.get(ParquetWriteSupport.SPARK_ROW_SCHEMA()))).size());
    writer = new Builder(buffer).withConf(c).withWriteMode(ParquetFileWriter.Mode.OVERWRITE)
        .withCompressionCodec(CompressionCodecName.fromConf(c.get("parquet.compression")))
        .withRowGroupSize(Long.MAX_VALUE)   // one row group: the file is closed before it would leave the object
        .withDictionaryPageSize(Math.max(4096, objectSize / 16 / columns)).build();
  }

  /** Drops the file being written (abort). */
  @Override
  public void close() {
    writer = null;
    buffer = null;
  }

  private static final class Builder extends ParquetWriter.Builder<InternalRow, Builder> {
    Builder(OutputFile file) {
      super(file);
    }

    @Override
    protected Builder self() {
      return this;
    }

    @Override
    protected WriteSupport<InternalRow> getWriteSupport(Configuration conf) {
      return new ParquetWriteSupport();
    }
  }

  /** An OutputFile in memory: the file is written to CephFS whole, in one call, once closed. */
  private static final class Buffer implements OutputFile {
    byte[] data;
    int len;

    Buffer(int capacity) {
      data = new byte[capacity];
    }

    @Override
    public PositionOutputStream create(long blockSize) {
      return createOrOverwrite(blockSize);
    }

    @Override
    public PositionOutputStream createOrOverwrite(long blockSize) {
      len = 0;
      return new PositionOutputStream() {
        @Override
        public long getPos() {
          return len;
        }

        @Override
        public void write(int b) {
          grow(1);
          data[len++] = (byte) b;
        }

        @Override
        public void write(byte[] b, int off, int n) {
          grow(n);
          System.arraycopy(b, off, data, len, n);
          len += n;
        }
      };
    }

    private void grow(int n) {
      if (len + n > data.length) data = Arrays.copyOf(data, Math.max(len + n, data.length * 2));
    }

    @Override
    public boolean supportsBlockSize() {
      return false;
    }

    @Override
    public long defaultBlockSize() {
      return 0;
    }
  }
}
