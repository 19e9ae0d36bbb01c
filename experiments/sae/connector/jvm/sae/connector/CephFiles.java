package sae.connector;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** Lists the Parquet files of a CephFS path as the RADOS objects that hold them (libcephfs). */
final class CephFiles {
  private static final int STATX_MODE = 0x1, STATX_INO = 0x100, STATX_SIZE = 0x200;
  private static final int S_IFMT = 0170000, S_IFDIR = 0040000;
  private static final Map<String, Pointer> MOUNTS = new ConcurrentHashMap<>();

  static {
    Runtime.getRuntime().addShutdownHook(new Thread(CephFiles::unmountAll, "sae-cephfs-unmount"));
  }

  /**
   * Closes this JVM's CephFS sessions as it exits: a session left open stays on the MDS until it
   * times out and delays the next application's first mount. Bounded, so a dead MDS cannot hold
   * the exit.
   */
  private static void unmountAll() {
    Thread closer = new Thread(() -> MOUNTS.values().forEach(m -> Native.cephfs().ceph_shutdown(m)));
    closer.setDaemon(true);
    closer.start();
    try {
      closer.join(5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private CephFiles() {}

  /** One file = one object: {@code <inode hex>.00000000} in {@code pool}. */
  record ObjectRef(String path, String oid, String pool, long size) implements Serializable {}

  /** Suffixes of the object files the class reads: Parquet, Arrow IPC and CSV files. */
  static final List<String> SUFFIXES = List.of(".parquet", ".arrow", ".csv");

  /** Whether {@code f} is a CSV file (which stores no schema: the request carries it). */
  static boolean csv(ObjectRef f) {
    return f.path().endsWith(".csv");
  }

  /** The {@code *.parquet}, {@code *.arrow} and {@code *.csv} files under {@code path} (a file or a
   * directory), sorted by path. */
  static List<ObjectRef> list(String conf, String user, int timeout, String path) throws IOException {
    Native.Libcephfs lib = Native.cephfs();
    Pointer m = mount(conf, user, timeout);
    List<String> files = new ArrayList<>();
    if (isDir(m, path)) {
      PointerByReference dir = new PointerByReference();
      Native.check(lib.ceph_opendir(m, path, dir), "listing " + path, "is it a CephFS directory?");
      try {
        for (Pointer e = lib.ceph_readdir(m, dir.getValue()); e != null; e = lib.ceph_readdir(m, dir.getValue())) {
          String name = e.getString(19, StandardCharsets.UTF_8.name());   // struct dirent.d_name
          if (SUFFIXES.stream().anyMatch(name::endsWith)) files.add(path.replaceAll("/+$", "") + "/" + name);
        }
      } finally {
        lib.ceph_closedir(m, dir.getValue());
      }
      Collections.sort(files);
    } else {
      files.add(path);
    }
    List<ObjectRef> out = new ArrayList<>();
    Memory stx = new Memory(256);
    for (String f : files) {
      Native.check(lib.ceph_statx(m, f, stx, STATX_INO | STATX_SIZE, 0), "stat " + f, null);
      long ino = stx.getLong(24), size = stx.getLong(32);
      long objectSize = Long.parseLong(xattr(m, f, "ceph.file.layout.object_size"));
      if (size > objectSize) {
        throw new IllegalArgumentException("[" + Native.host() + " sae-ceph] " + f + " is " + size
            + " bytes but its objects hold " + objectSize + ": it spans several RADOS objects; deploy it with "
            + "data_deploy (one file = one object)");
      }
      out.add(new ObjectRef(f, String.format("%x.00000000", ino), xattr(m, f, "ceph.file.layout.pool"), size));
    }
    return out;
  }

  private static boolean isDir(Pointer m, String path) throws IOException {
    Memory stx = new Memory(256);
    Native.check(Native.cephfs().ceph_statx(m, path, stx, STATX_MODE, 0), "stat " + path,
        "does the path exist in CephFS?");
    return ((stx.getShort(20) & 0xFFFF) & S_IFMT) == S_IFDIR;
  }

  private static String xattr(Pointer m, String path, String name) throws IOException {
    Memory buf = new Memory(512);
    int n = Native.check(Native.cephfs().ceph_getxattr(m, path, name, buf, buf.size()), name + " of " + path, null);
    return new String(buf.getByteArray(0, n), StandardCharsets.UTF_8).trim();
  }

  private static Pointer mount(String conf, String user, int timeout) throws IOException {
    String key = conf + "\0" + user;
    Pointer m = MOUNTS.get(key);
    if (m != null) return m;
    synchronized (MOUNTS) {
      m = MOUNTS.get(key);
      if (m != null) return m;
      Native.Libcephfs lib = Native.cephfs();
      PointerByReference ref = new PointerByReference();
      Native.check(lib.ceph_create(ref, user), "ceph_create", null);
      m = ref.getValue();
      Native.check(lib.ceph_conf_read_file(m, conf), "reading " + conf, "pass the client ceph.conf as ceph_conf");
      Native.check(lib.ceph_conf_set(m, "client_mount_timeout", Integer.toString(timeout)),
          "setting client_mount_timeout", null);
      Native.check(lib.ceph_mount(m, "/"), "mounting CephFS with " + conf, "is the MDS up?");
      MOUNTS.put(key, m);
      return m;
    }
  }
}
