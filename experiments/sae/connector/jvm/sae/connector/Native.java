package sae.connector;

import com.sun.jna.Library;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.net.InetAddress;

/** JNA bindings of the librados and libcephfs C calls the connector makes. */
final class Native {
  private Native() {}

  interface Librados extends Library {
    int rados_create(PointerByReference cluster, String id);
    int rados_conf_read_file(Pointer cluster, String path);
    int rados_conf_set(Pointer cluster, String option, String value);
    int rados_connect(Pointer cluster);
    int rados_ioctx_create(Pointer cluster, String pool, PointerByReference ioctx);
    int rados_exec(Pointer io, String oid, String cls, String method, byte[] in, long inLen, Pointer out,
        long outLen);
    Pointer rados_create_read_op();
    void rados_release_read_op(Pointer op);
    void rados_read_op_exec(Pointer op, String cls, String method, byte[] in, long inLen, PointerByReference outBuf,
        LongByReference outLen, IntByReference prval);
    void rados_read_op_read(Pointer op, long offset, long len, Pointer buffer, LongByReference bytesRead,
        IntByReference prval);
    int rados_aio_create_completion(Pointer arg, Pointer onComplete, Pointer onSafe, PointerByReference completion);
    int rados_aio_read_op_operate(Pointer op, Pointer io, Pointer completion, String oid, int flags);
    int rados_aio_wait_for_complete(Pointer completion);
    int rados_aio_is_complete(Pointer completion);
    int rados_aio_get_return_value(Pointer completion);
    void rados_aio_release(Pointer completion);
    void rados_buffer_free(Pointer buf);
  }

  interface Libcephfs extends Library {
    int ceph_create(PointerByReference mount, String id);
    int ceph_conf_read_file(Pointer mount, String path);
    int ceph_conf_set(Pointer mount, String option, String value);
    int ceph_mount(Pointer mount, String root);
    int ceph_opendir(Pointer mount, String path, PointerByReference dir);
    Pointer ceph_readdir(Pointer mount, Pointer dir);
    int ceph_closedir(Pointer mount, Pointer dir);
    int ceph_statx(Pointer mount, String path, Pointer statx, int want, int flags);
    int ceph_getxattr(Pointer mount, String path, String name, Pointer value, long size);
    int ceph_shutdown(Pointer mount);
    int ceph_open(Pointer mount, String path, int flags, int mode);
    int ceph_open_layout(Pointer mount, String path, int flags, int mode, int stripeUnit, int stripeCount,
        int objectSize, String dataPool);
    int ceph_write(Pointer mount, int fd, byte[] buf, long size, long offset);
    int ceph_read(Pointer mount, int fd, byte[] buf, long size, long offset);
    int ceph_fsync(Pointer mount, int fd, int syncDataOnly);
    int ceph_close(Pointer mount, int fd);
    int ceph_unlink(Pointer mount, String path);
    int ceph_rmdir(Pointer mount, String path);
    int ceph_mkdir(Pointer mount, String path, int mode);
    int ceph_mkdirs(Pointer mount, String path, int mode);
  }

  private static final class Holder {
    static final Librados RADOS = load("librados.so.2", Librados.class, "librados2");
    static final Libcephfs CEPHFS = load("libcephfs.so.2", Libcephfs.class, "libcephfs2");
  }

  static Librados rados() {
    return Holder.RADOS;
  }

  static Libcephfs cephfs() {
    return Holder.CEPHFS;
  }

  private static <T extends Library> T load(String lib, Class<T> api, String pkg) {
    try {
      return com.sun.jna.Native.load(lib, api);
    } catch (UnsatisfiedLinkError e) {
      throw new IllegalStateException("[" + host() + " sae-ceph] cannot load " + lib + " (" + e.getMessage()
          + "); install " + pkg + " on every Spark node (rados_deploy's ceph-client role does)", e);
    }
  }

  /** This host's name, for error messages. */
  static String host() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (Exception e) {
      return "localhost";
    }
  }

  /** {@code ret} if non-negative, else an IOException naming the call, errno and what to do. */
  static int check(int ret, String what, String hint) throws java.io.IOException {
    if (ret >= 0) return ret;
    throw new java.io.IOException("[" + host() + " sae-ceph] " + what + " failed: errno " + -ret + " ("
        + errnoName(-ret) + ")" + (hint == null ? "" : "; " + hint));
  }

  static String errnoName(int errno) {
    return switch (errno) {
      case 1 -> "EPERM";
      case 2 -> "ENOENT";
      case 5 -> "EIO";
      case 7 -> "E2BIG";
      case 13 -> "EACCES";
      case 17 -> "EEXIST";
      case 22 -> "EINVAL";
      case 34 -> "ERANGE";
      case 61 -> "ENODATA";
      case 74 -> "EBADMSG";
      case 93 -> "EPROTONOSUPPORT";
      case 95 -> "EOPNOTSUPP";
      case 108 -> "ESHUTDOWN";
      case 110 -> "ETIMEDOUT";
      default -> "errno " + errno;
    };
  }
}
