package sae.indexed;

import java.io.Serializable;
import java.util.Arrays;

import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.Platform;

/**
 * The rows of one partition version, in large append-only byte chunks: each row is an 8-byte
 * header and then its {@link UnsafeRow} bytes. The header holds the row's size in 8-byte words
 * (high 24 bits) and the address plus one of the previous row with the same key (low 40 bits; 0:
 * none), so the rows of a key form a chain from the newest back.
 *
 * <p>An address is a chunk number (high 16 bits) and a word offset in that chunk (low 24 bits).
 * A new version ({@link #next}) shares its parent's chunks, which are never written again, and
 * adds chunks of its own; the last one is trimmed when the version is {@link #sealed}.
 */
final class RowStore implements Serializable {
  private static final long serialVersionUID = 1L;
  static final int HEADER = 8;
  static final long NONE = -1;
  private static final int MIN_CHUNK = 1 << 16;
  private static final int MAX_CHUNK = 1 << 22;
  private static final int OFFSET_BITS = 24;
  private static final int LINK_BITS = 40;
  private static final int MAX_CHUNKS = 1 << (LINK_BITS - OFFSET_BITS);
  private static final long MAX_ROW_WORDS = (1L << OFFSET_BITS) - 1;

  private byte[][] chunks;
  private int[] used;
  private int count;
  private final int shared;   // chunks of older versions (read only)
  private int nextSize;
  long rows;
  long rowBytes;

  private RowStore(byte[][] chunks, int[] used, int count, long rows, long rowBytes) {
    this.chunks = chunks;
    this.used = used;
    this.count = count;
    this.shared = count;
    this.nextSize = MIN_CHUNK;
    this.rows = rows;
    this.rowBytes = rowBytes;
  }

  static RowStore empty() {
    return new RowStore(new byte[4][], new int[4], 0, 0, 0);
  }

  /** A store for the next version: this one's rows, and room for more (this one stays as is). */
  RowStore next() {
    int room = count + 4;
    return new RowStore(Arrays.copyOf(chunks, room), Arrays.copyOf(used, room), count, rows, rowBytes);
  }

  /** Append ``row`` whose previous same-key row is at ``prev`` (or {@link #NONE}); its address. */
  long append(UnsafeRow row, long prev) {
    int size = row.getSizeInBytes();
    if (size / 8 > MAX_ROW_WORDS) {
      throw new IllegalStateException("indexed: a row of " + size + " bytes; rows up to " + (MAX_ROW_WORDS * 8)
          + " bytes can be indexed");
    }
    int need = HEADER + size;
    if (count == shared || used[count - 1] + need > chunks[count - 1].length) {
      newChunk(need);
    }
    int c = count - 1;
    int offset = used[c];
    long base = Platform.BYTE_ARRAY_OFFSET + offset;
    Platform.putLong(chunks[c], base, ((long) (size >>> 3) << LINK_BITS) | (prev + 1));
    row.writeToMemory(chunks[c], base + HEADER);
    used[c] = offset + need;
    rows++;
    rowBytes += size;
    return ((long) c << OFFSET_BITS) | (offset >>> 3);
  }

  private void newChunk(int need) {
    if (count == MAX_CHUNKS) {
      throw new IllegalStateException("indexed: a partition's rows fill " + MAX_CHUNKS
          + " chunks; index with more partitions");
    }
    if (count == chunks.length) {
      chunks = Arrays.copyOf(chunks, count * 2);
      used = Arrays.copyOf(used, count * 2);
    }
    chunks[count] = new byte[Math.max(need, nextSize)];
    used[count++] = 0;
    nextSize = Math.min(nextSize * 2, MAX_CHUNK);
  }

  /** Trim the last chunk of this version to its rows; nothing is appended after. */
  RowStore sealed() {
    if (count > shared && used[count - 1] < chunks[count - 1].length) {
      chunks[count - 1] = Arrays.copyOf(chunks[count - 1], used[count - 1]);
    }
    chunks = Arrays.copyOf(chunks, count);
    used = Arrays.copyOf(used, count);
    return this;
  }

  /** Point ``row`` at the row stored at ``address``; returns the address of the previous row of
   * its key, or {@link #NONE}. */
  long read(long address, UnsafeRow row) {
    byte[] chunk = chunks[(int) (address >>> OFFSET_BITS)];
    long base = Platform.BYTE_ARRAY_OFFSET + ((address & MAX_ROW_WORDS) << 3);
    long header = Platform.getLong(chunk, base);
    row.pointTo(chunk, base + HEADER, (int) (header >>> LINK_BITS) << 3);
    return (header & ((1L << LINK_BITS) - 1)) - 1;
  }

  /** Bytes of row headers (size and chain link). */
  long headerBytes() {
    return rows * HEADER;
  }

  /** Bytes the chunks hold, used or not. */
  long chunkBytes() {
    long n = 0;
    for (int c = 0; c < count; c++) n += chunks[c].length;
    return n;
  }

  /** Every row in the order appended: call {@link Cursor#next} until it returns false. */
  Cursor cursor(int numFields) {
    return new Cursor(numFields);
  }

  final class Cursor {
    final UnsafeRow row;
    private int chunk;
    private int offset;

    private Cursor(int numFields) {
      row = new UnsafeRow(numFields);
    }

    boolean next() {
      while (chunk < count && offset >= used[chunk]) {
        chunk++;
        offset = 0;
      }
      if (chunk == count) return false;
      read(((long) chunk << OFFSET_BITS) | (offset >>> 3), row);
      offset += HEADER + row.getSizeInBytes();
      return true;
    }
  }
}
