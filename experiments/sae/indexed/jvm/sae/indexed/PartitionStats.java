package sae.indexed;

import java.io.Serializable;

/** What one partition of an index version holds and what building it took (or, from
 * {@link #plus}, a sum over partitions). Bytes of a version include those it shares with the
 * versions it was appended to. */
public final class PartitionStats implements Serializable {
  private static final long serialVersionUID = 1L;
  private final int partition;
  private final long rows;
  private final long nullKeyRows;
  private final long keys;
  private final long rowBytes;
  private final long headerBytes;
  private final long chunkBytes;
  private final long indexBytes;
  private final int maps;
  private final long buildNanos;

  PartitionStats(int partition, long rows, long nullKeyRows, long keys, long rowBytes, long headerBytes,
                 long chunkBytes, long indexBytes, int maps, long buildNanos) {
    this.partition = partition;
    this.rows = rows;
    this.nullKeyRows = nullKeyRows;
    this.keys = keys;
    this.rowBytes = rowBytes;
    this.headerBytes = headerBytes;
    this.chunkBytes = chunkBytes;
    this.indexBytes = indexBytes;
    this.maps = maps;
    this.buildNanos = buildNanos;
  }

  /** The partition (-1 for a sum). */
  public int partition() { return partition; }
  /** Rows stored, null keys included. */
  public long rows() { return rows; }
  /** Rows whose key is null: stored (a scan returns them), matched by no lookup or join. */
  public long nullKeyRows() { return nullKeyRows; }
  /** Distinct non-null keys. */
  public long keys() { return keys; }
  /** Bytes of the rows in Spark's UnsafeRow format. */
  public long rowBytes() { return rowBytes; }
  /** Bytes of the rows' 8-byte headers (size and the link to the key's previous row). */
  public long headerBytes() { return headerBytes; }
  /** Bytes of the row chunks (rows and headers; chunks are trimmed, so hardly more). */
  public long chunkBytes() { return chunkBytes; }
  /** Bytes of the key maps' tables. */
  public long indexBytes() { return indexBytes; }
  /** Key maps a lookup may probe (one base, then one per append until they are merged). */
  public int maps() { return maps; }
  /** Time this version took to build the partition (its own rows only, for an append). */
  public long buildNanos() { return buildNanos; }

  /** The sum of this and ``o`` (partition -1; ``maps`` the most of either, ``buildNanos`` summed). */
  public PartitionStats plus(PartitionStats o) {
    return new PartitionStats(-1, rows + o.rows, nullKeyRows + o.nullKeyRows, keys + o.keys, rowBytes + o.rowBytes,
        headerBytes + o.headerBytes, chunkBytes + o.chunkBytes, indexBytes + o.indexBytes, Math.max(maps, o.maps),
        buildNanos + o.buildNanos);
  }

  static PartitionStats zero() {
    return new PartitionStats(-1, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  }
}
