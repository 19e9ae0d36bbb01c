package sae.indexed;

import java.io.Serializable;

/**
 * An open-addressing hash map from a partition's keys to the address of their newest row
 * ({@link RowStore}): linear probing over a table of any size (a key's first slot is its 32-bit
 * hash scaled to the table), filled to at most {@link #LOAD} while it is built and
 * resized to exactly that load when {@link #frozen}; read only after. Heads are kept plus one,
 * so a zero slot is empty. Subclasses hold the keys: {@link LongKeyMap}, {@link StringKeyMap}.
 */
abstract class KeyMap implements Serializable {
  private static final long serialVersionUID = 1L;
  static final double LOAD = 0.7;

  long[] heads;
  int size;

  KeyMap(int capacity) {
    heads = new long[Math.max(capacity, 4)];
  }

  static int capacityFor(int keys) {
    return (int) Math.min(Integer.MAX_VALUE - 8, (long) Math.ceil(keys / LOAD) + 1);
  }

  /** The first slot to probe for a key of this 32-bit hash. */
  final int slot(int hash) {
    return (int) (((hash & 0xffffffffL) * heads.length) >>> 32);
  }

  final int nextSlot(int i) {
    return i + 1 == heads.length ? 0 : i + 1;
  }

  final boolean full() {
    return size + 1 > heads.length * LOAD;
  }

  /** This map's entries in a table of exactly {@link #LOAD}. */
  abstract KeyMap frozen();

  /** Bytes of the table. */
  abstract long bytes();
}
