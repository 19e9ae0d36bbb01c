package sae.indexed;

/** A {@link KeyMap} of integral keys (held as longs beside the heads). */
final class LongKeyMap extends KeyMap {
  private static final long serialVersionUID = 1L;
  private long[] keys = new long[heads.length];   // a slot each: heads is made by KeyMap(), which runs first

  LongKeyMap(int capacity) {
    super(capacity);
  }

  /** The newest row of ``key``, or {@link RowStore#NONE}. */
  long get(long key) {
    for (int i = slot(KeyColumn.mapHash(key)); ; i = nextSlot(i)) {
      long h = heads[i];
      if (h == 0) return RowStore.NONE;
      if (keys[i] == key) return h - 1;
    }
  }

  /** Make ``head`` the newest row of ``key``; whether ``key`` is new to this map. */
  boolean put(long key, long head) {
    if (full()) grow(heads.length * 2);
    for (int i = slot(KeyColumn.mapHash(key)); ; i = nextSlot(i)) {
      if (heads[i] == 0) {
        keys[i] = key;
        heads[i] = head + 1;
        size++;
        return true;
      }
      if (keys[i] == key) {
        heads[i] = head + 1;
        return false;
      }
    }
  }

  /** Put every entry of ``other`` here, replacing the heads of keys already here. */
  void putAll(LongKeyMap other) {
    for (int i = 0; i < other.heads.length; i++) {
      if (other.heads[i] != 0) put(other.keys[i], other.heads[i] - 1);
    }
  }

  private void grow(int capacity) {
    LongKeyMap bigger = new LongKeyMap(capacity);
    bigger.putAll(this);
    heads = bigger.heads;
    keys = bigger.keys;
  }

  @Override
  LongKeyMap frozen() {
    LongKeyMap m = new LongKeyMap(capacityFor(size));
    m.putAll(this);
    return m;
  }

  @Override
  long bytes() {
    return 16L * heads.length;
  }
}
