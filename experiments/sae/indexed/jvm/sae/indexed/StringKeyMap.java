package sae.indexed;

import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A {@link KeyMap} of string keys. It keeps each key's 32-bit hash, not the key: a slot whose
 * hash matches is confirmed against the key of the row its head points to in the
 * {@link RowStore} (``row`` is a scratch row to read it with, ``ordinal`` the key's field).
 */
final class StringKeyMap extends KeyMap {
  private static final long serialVersionUID = 1L;
  private int[] hashes = new int[heads.length];   // a slot each: heads is made by KeyMap(), which runs first

  StringKeyMap(int capacity) {
    super(capacity);
  }

  /** The newest row of ``key`` (whose {@link KeyColumn#mapHash} is ``hash``), or {@link RowStore#NONE}. */
  long get(UTF8String key, int hash, RowStore store, UnsafeRow row, int ordinal) {
    for (int i = slot(hash); ; i = nextSlot(i)) {
      long h = heads[i];
      if (h == 0) return RowStore.NONE;
      if (hashes[i] == hash && sameKey(key, h - 1, store, row, ordinal)) return h - 1;
    }
  }

  /** Make ``head`` the newest row of ``key``; whether ``key`` is new to this map. */
  boolean put(UTF8String key, int hash, long head, RowStore store, UnsafeRow row, int ordinal) {
    if (full()) grow(heads.length * 2);
    for (int i = slot(hash); ; i = nextSlot(i)) {
      if (heads[i] == 0) {
        hashes[i] = hash;
        heads[i] = head + 1;
        size++;
        return true;
      }
      if (hashes[i] == hash && sameKey(key, heads[i] - 1, store, row, ordinal)) {
        heads[i] = head + 1;
        return false;
      }
    }
  }

  private static boolean sameKey(UTF8String key, long address, RowStore store, UnsafeRow row, int ordinal) {
    store.read(address, row);
    return row.getUTF8String(ordinal).equals(key);
  }

  /** Put every entry of ``other`` here, replacing the heads of keys already here. */
  void putAll(StringKeyMap other, RowStore store, UnsafeRow row, int ordinal) {
    for (int i = 0; i < other.heads.length; i++) {
      if (other.heads[i] != 0) {
        store.read(other.heads[i] - 1, row);
        UTF8String key = row.getUTF8String(ordinal).copy();
        put(key, other.hashes[i], other.heads[i] - 1, store, row, ordinal);
      }
    }
  }

  /** Entries placed by their hash alone: the keys of one map are distinct. */
  private void place(int hash, long headPlusOne) {
    for (int i = slot(hash); ; i = nextSlot(i)) {
      if (heads[i] == 0) {
        hashes[i] = hash;
        heads[i] = headPlusOne;
        size++;
        return;
      }
    }
  }

  private void grow(int capacity) {
    int[] oldHashes = hashes;
    long[] oldHeads = heads;
    heads = new long[capacity];
    hashes = new int[capacity];
    size = 0;
    for (int i = 0; i < oldHeads.length; i++) {
      if (oldHeads[i] != 0) place(oldHashes[i], oldHeads[i]);
    }
  }

  @Override
  StringKeyMap frozen() {
    StringKeyMap m = new StringKeyMap(capacityFor(size));
    for (int i = 0; i < heads.length; i++) {
      if (heads[i] != 0) m.place(hashes[i], heads[i]);
    }
    return m;
  }

  @Override
  long bytes() {
    return 12L * heads.length;
  }
}
