package sae.indexed;

import java.io.Serializable;
import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.JoinedRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One partition of one version of an index: its rows ({@link RowStore}) and the key maps that
 * lead from a key to its newest row, from which the rows of that key chain back to the oldest.
 *
 * <p>Versions: {@link #append} returns a new partition that shares this one's chunks and maps and
 * adds a chunk run and a map of its own (a key's new rows link to its rows in this version), so
 * this one reads as before. A lookup probes the maps newest first; the first that knows the key
 * holds its newest row. After {@link #MAX_MAPS} maps, an append merges them into one. Read only
 * once built, so tasks may read it at once.
 */
final class IndexedPartition implements Serializable {
  private static final long serialVersionUID = 1L;
  static final int MAX_MAPS = 8;

  final int id;
  final KeyColumn key;
  private final RowStore store;
  private final KeyMap[] maps;   // oldest first
  private final long keys;
  private final long nullKeyRows;
  private final long nanos;

  private IndexedPartition(int id, KeyColumn key, RowStore store, KeyMap[] maps, long keys, long nullKeyRows,
                           long nanos) {
    this.id = id;
    this.key = key;
    this.store = store;
    this.maps = maps;
    this.keys = keys;
    this.nullKeyRows = nullKeyRows;
    this.nanos = nanos;
  }

  /** Partition ``id`` of an index of no rows yet. */
  static IndexedPartition empty(int id, KeyColumn key) {
    return new IndexedPartition(id, key, RowStore.empty(), new KeyMap[0], 0, 0, 0);
  }

  /** The next version of this partition: its rows and ``rows`` (each must hash to this partition),
   * whose key column is ``next`` (this one's, its schema's nullability widened to the new rows'). */
  IndexedPartition append(Iterator<InternalRow> rows, KeyColumn next) {
    long start = System.nanoTime();
    KeyColumn key = next;
    RowStore store = this.store.next();
    KeyMap delta = key.string ? new StringKeyMap(16) : new LongKeyMap(16);
    UnsafeRow scratch = new UnsafeRow(key.schema.size());
    UnsafeProjection toUnsafe = null;
    long newKeys = 0, nulls = 0;
    int ordinal = key.ordinal;
    while (rows.hasNext()) {
      InternalRow in = rows.next();
      if (!(in instanceof UnsafeRow) && toUnsafe == null) toUnsafe = UnsafeProjection.create(key.schema);
      UnsafeRow row = in instanceof UnsafeRow ? (UnsafeRow) in : toUnsafe.apply(in);
      if (row.isNullAt(ordinal)) {
        placed(key.partitionOfNull(), "null", key);
        store.append(row, RowStore.NONE);
        nulls++;
      } else if (key.string) {
        UTF8String k = key.stringKey(row);
        placed(key.partitionOf(k), k, key);
        int hash = KeyColumn.mapHash(k);
        StringKeyMap d = (StringKeyMap) delta;
        long prev = d.get(k, hash, store, scratch, ordinal);
        if (prev == RowStore.NONE) prev = head(k, hash, store, scratch);
        if (prev == RowStore.NONE) newKeys++;
        d.put(k, hash, store.append(row, prev), store, scratch, ordinal);
      } else {
        long k = key.longKey(row);
        placed(key.partitionOf(k), k, key);
        LongKeyMap d = (LongKeyMap) delta;
        long prev = d.get(k);
        if (prev == RowStore.NONE) prev = head(k);
        if (prev == RowStore.NONE) newKeys++;
        d.put(k, store.append(row, prev));
      }
    }
    KeyMap[] nextMaps = delta.size == 0 ? maps : Arrays.copyOf(maps, maps.length + 1);
    if (delta.size > 0) nextMaps[maps.length] = delta.frozen();
    if (nextMaps.length > MAX_MAPS) nextMaps = new KeyMap[] {merged(nextMaps, store, scratch)};
    return new IndexedPartition(id, key, store.sealed(), nextMaps, keys + newKeys, nullKeyRows + nulls,
        System.nanoTime() - start);
  }

  private void placed(int partition, Object k, KeyColumn key) {
    if (partition != id) {
      throw new IllegalStateException("indexed: key " + k + " of " + key.name + " reached partition " + id
          + " but hashes to " + partition + "; this Spark's hash partitioning differs from the index's");
    }
  }

  private KeyMap merged(KeyMap[] all, RowStore s, UnsafeRow scratch) {
    int total = 0;
    for (KeyMap m : all) total += m.size;
    if (key.string) {
      StringKeyMap out = new StringKeyMap(KeyMap.capacityFor(total));
      for (KeyMap m : all) out.putAll((StringKeyMap) m, s, scratch, key.ordinal);
      return out.frozen();
    }
    LongKeyMap out = new LongKeyMap(KeyMap.capacityFor(total));
    for (KeyMap m : all) out.putAll((LongKeyMap) m);
    return out.frozen();
  }

  /** The newest row of ``k`` in this version, or {@link RowStore#NONE}. */
  private long head(long k) {
    for (int m = maps.length - 1; m >= 0; m--) {
      long h = ((LongKeyMap) maps[m]).get(k);
      if (h != RowStore.NONE) return h;
    }
    return RowStore.NONE;
  }

  private long head(UTF8String k, int hash, RowStore s, UnsafeRow scratch) {
    for (int m = maps.length - 1; m >= 0; m--) {
      long h = ((StringKeyMap) maps[m]).get(k, hash, s, scratch, key.ordinal);
      if (h != RowStore.NONE) return h;
    }
    return RowStore.NONE;
  }

  /** The newest row of an internal key value ({@link KeyColumn#internal}). */
  private long head(Object k, UnsafeRow scratch) {
    if (k instanceof UTF8String) {
      UTF8String s = (UTF8String) k;
      return head(s, KeyColumn.mapHash(s), store, scratch);
    }
    return head(((Long) k).longValue());
  }

  /** The rows of ``keys`` (internal values, distinct; null for none). The row returned is reused. */
  Iterator<UnsafeRow> lookup(Object[] keys) {
    Object[] ks = keys == null ? new Object[0] : keys;
    return new Matches<UnsafeRow>() {
      private int next;
      private final UnsafeRow scratch = new UnsafeRow(key.schema.size());

      @Override
      long nextHead() {
        while (next < ks.length) {
          long h = head(ks[next++], scratch);
          if (h != RowStore.NONE) return h;
        }
        return END;
      }

      @Override
      UnsafeRow emit(UnsafeRow row) {
        return row;
      }
    };
  }

  /**
   * The inner equi-join of ``probe`` with this partition: each probe row whose column ``ordinal``
   * (of type ``type``, comparable with the key) equals a key, joined with each row of that key:
   * index columns, then the probe's, as rows of ``out``. The row returned is reused.
   */
  Iterator<InternalRow> join(Iterator<InternalRow> probe, int ordinal, DataType type, StructType out) {
    UnsafeProjection project = UnsafeProjection.create(out);
    JoinedRow joined = new JoinedRow();
    return new Matches<InternalRow>() {
      private final UnsafeRow scratch = new UnsafeRow(key.schema.size());
      private InternalRow current;

      @Override
      long nextHead() {
        while (probe.hasNext()) {
          current = probe.next();
          if (current.isNullAt(ordinal)) continue;
          long h;
          if (key.string) {
            UTF8String k = current.getUTF8String(ordinal);
            h = head(k, KeyColumn.mapHash(k), store, scratch);
          } else {
            long k = KeyColumn.readLong(current, ordinal, type);
            h = k < key.min() || k > key.max() ? RowStore.NONE : head(k);
          }
          if (h != RowStore.NONE) return h;
        }
        return END;
      }

      @Override
      InternalRow emit(UnsafeRow row) {
        return project.apply(joined.apply(row, current));
      }
    };
  }

  /** Every row of this version, in the order appended (null keys too). The row returned is reused. */
  Iterator<UnsafeRow> scan() {
    RowStore.Cursor cursor = store.cursor(key.schema.size());
    return new Iterator<UnsafeRow>() {
      private boolean ready;
      private boolean more;

      @Override
      public boolean hasNext() {
        if (!ready) {
          more = cursor.next();
          ready = true;
        }
        return more;
      }

      @Override
      public UnsafeRow next() {
        if (!hasNext()) throw new NoSuchElementException();
        ready = false;
        return cursor.row;
      }
    };
  }

  PartitionStats stats() {
    long indexBytes = 0;
    for (KeyMap m : maps) indexBytes += m.bytes();
    return new PartitionStats(id, store.rows, nullKeyRows, keys, store.rowBytes, store.headerBytes(),
        store.chunkBytes(), indexBytes, maps.length, nanos);
  }

  /** Rows found by walking key chains: {@link #nextHead} gives the newest row of the next key
   * that has rows (or {@link #END}), {@link #emit} what to return for each row of its chain. */
  private abstract class Matches<T> implements Iterator<T> {
    static final long END = -2;
    private final UnsafeRow row = new UnsafeRow(key.schema.size());
    private long address = RowStore.NONE;
    private boolean done;

    abstract long nextHead();

    abstract T emit(UnsafeRow row);

    @Override
    public boolean hasNext() {
      if (address == RowStore.NONE && !done) {
        address = nextHead();
        if (address == END) {
          done = true;
          address = RowStore.NONE;
        }
      }
      return address != RowStore.NONE;
    }

    @Override
    public T next() {
      if (!hasNext()) throw new NoSuchElementException();
      address = store.read(address, row);
      return emit(row);
    }
  }
}
