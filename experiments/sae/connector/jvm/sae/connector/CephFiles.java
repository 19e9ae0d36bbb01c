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
  private static final int O_WRONLY = 01, O_CREAT = 0100, O_EXCL = 0200;
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

  /**
   * The {@code *.parquet}, {@code *.arrow} and {@code *.csv} files under {@code path} (a file or a
   * directory), sorted by path: in a directory the write path committed to, the files its
   * manifests name ({@link Manifest#state}); elsewhere every such file but a writer's uncommitted
   * parts; null when {@code path} does not exist.
   */
  static List<ObjectRef> list(String conf, String user, int timeout, String path) throws IOException {
    Native.Libcephfs lib = Native.cephfs();
    Pointer m = mount(conf, user, timeout);
    List<String> files = new ArrayList<>();
    Boolean dir = kind(m, path);
    if (dir == null) return null;
    if (dir) {
      String d = path.replaceAll("/+$", "");
      for (String name : state(m, d, names(m, d)).visible()) files.add(d + "/" + name);
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

  /** What directory {@code dir}, holding {@code names}, holds for readers (its manifests read). */
  static Manifest.State state(Pointer m, String dir, List<String> names) throws IOException {
    try {
      return Manifest.state(names, SUFFIXES, name -> read(m, dir + "/" + name));
    } catch (IOException e) {
      if (e.getMessage().startsWith("[")) throw e;
      throw new IOException("[" + Native.host() + " sae-ceph] " + dir + ": " + e.getMessage(), e);
    }
  }

  /** The names in directory {@code dir} ("." and ".." left out). */
  static List<String> names(Pointer m, String dir) throws IOException {
    Native.Libcephfs lib = Native.cephfs();
    PointerByReference d = new PointerByReference();
    Native.check(lib.ceph_opendir(m, dir, d), "listing " + dir, "is it a CephFS directory?");
    List<String> out = new ArrayList<>();
    try {
      for (Pointer e = lib.ceph_readdir(m, d.getValue()); e != null; e = lib.ceph_readdir(m, d.getValue())) {
        String name = e.getString(19, StandardCharsets.UTF_8.name());   // struct dirent.d_name
        if (!name.equals(".") && !name.equals("..")) out.add(name);
      }
    } finally {
      lib.ceph_closedir(m, d.getValue());
    }
    Collections.sort(out);
    return out;
  }

  /** The whole content of file {@code path}, or null when it does not exist. */
  static byte[] read(Pointer m, String path) throws IOException {
    Native.Libcephfs lib = Native.cephfs();
    int fd = lib.ceph_open(m, path, 0, 0);
    if (fd == -2) return null;
    Native.check(fd, "opening " + path, null);
    try {
      Memory stx = new Memory(256);
      Native.check(lib.ceph_statx(m, path, stx, STATX_SIZE, 0), "stat " + path, null);
      byte[] buf = new byte[(int) stx.getLong(32)];
      int n = Native.check(lib.ceph_read(m, fd, buf, buf.length, 0), "reading " + path, null);
      return n == buf.length ? buf : java.util.Arrays.copyOf(buf, n);
    } finally {
      lib.ceph_close(m, fd);
    }
  }

  /**
   * Creates {@code path} (it must not exist) as one RADOS object of {@code objectSize} bytes
   * (stripe unit = object size, one stripe: ceph_open_layout) holding {@code len} bytes of
   * {@code data}, written in one call and synced before this returns.
   */
  static void create(Pointer m, String path, byte[] data, int len, int objectSize) throws IOException {
    Native.Libcephfs lib = Native.cephfs();
    int fd = Native.check(lib.ceph_open_layout(m, path, O_WRONLY | O_CREAT | O_EXCL, 0644, objectSize, 1, objectSize,
        null), "creating " + path, "does the cephx user have MDS caps rw with p (layouts)?");
    try {
      int n = Native.check(lib.ceph_write(m, fd, data, len, 0), "writing " + path, null);
      if (n != len) throw new IOException("[" + Native.host() + " sae-ceph] short write of " + path + ": " + n + " of " + len);
      Native.check(lib.ceph_fsync(m, fd, 0), "syncing " + path, null);
    } finally {
      lib.ceph_close(m, fd);
    }
  }

  /** Removes file {@code path}; false when it did not exist. */
  static boolean unlink(Pointer m, String path) throws IOException {
    int r = Native.cephfs().ceph_unlink(m, path);
    if (r == -2) return false;
    Native.check(r, "removing " + path, null);
    return true;
  }

  /** Removes {@code path} and, for a directory, everything under it; false when it did not exist. */
  static boolean removeTree(Pointer m, String path) throws IOException {
    Boolean dir = kind(m, path);
    if (dir == null) return false;
    if (!dir) return unlink(m, path);
    for (String name : names(m, path)) removeTree(m, path + "/" + name);
    Native.check(Native.cephfs().ceph_rmdir(m, path), "removing directory " + path, null);
    return true;
  }

  /**
   * Makes directory {@code dir} (its parents too where missing): true if made now, false if it
   * was a directory already, null if a file is there. Where the parent exists, that is one MDS
   * request (mkdir), with no lookup before it.
   */
  static Boolean makeDir(Pointer m, String dir) throws IOException {
    int r = Native.cephfs().ceph_mkdir(m, dir, 0755);
    if (r == -2) {   // ENOENT: a parent is missing
      mkdirs(m, dir);
      return true;
    }
    if (r == -17) return Boolean.TRUE.equals(kind(m, dir)) ? Boolean.FALSE : null;   // EEXIST
    Native.check(r, "creating directory " + dir, null);
    return true;
  }

  /** Creates directory {@code dir} and its parents where missing. */
  static void mkdirs(Pointer m, String dir) throws IOException {
    int r = Native.cephfs().ceph_mkdirs(m, dir, 0755);
    if (r != -17) Native.check(r, "creating directory " + dir, null);
  }

  /** Whether {@code path} exists: a directory (true), a file (false) or nothing (null). */
  static Boolean kind(Pointer m, String path) throws IOException {
    Memory stx = new Memory(256);
    int r = Native.cephfs().ceph_statx(m, path, stx, STATX_MODE, 0);
    if (r == -2) return null;
    Native.check(r, "stat " + path, null);
    return ((stx.getShort(20) & 0xFFFF) & S_IFMT) == S_IFDIR;
  }

  /** The object size of directory {@code dir}'s layout (what data_deploy set), or 0 where it has none. */
  static long dirObjectSize(Pointer m, String dir) throws IOException {
    Memory buf = new Memory(64);
    int n = Native.cephfs().ceph_getxattr(m, dir, "ceph.dir.layout.object_size", buf, buf.size());
    if (n == -61) return 0;   // ENODATA: the directory inherits its layout
    Native.check(n, "ceph.dir.layout.object_size of " + dir, null);
    return Long.parseLong(new String(buf.getByteArray(0, n), StandardCharsets.UTF_8).trim());
  }

  private static String xattr(Pointer m, String path, String name) throws IOException {
    Memory buf = new Memory(512);
    int n = Native.check(Native.cephfs().ceph_getxattr(m, path, name, buf, buf.size()), name + " of " + path, null);
    return new String(buf.getByteArray(0, n), StandardCharsets.UTF_8).trim();
  }

  /** This JVM's CephFS session for {@code conf} and {@code user}, made once. */
  static Pointer mount(String conf, String user, int timeout) throws IOException {
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
