package sae.connector;

import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.IntByReference;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** One connected librados client per JVM and ceph.conf, with its I/O contexts per pool. */
final class Rados {
  static final String CLASS = "sae";
  private static final Map<String, Rados> CLIENTS = new ConcurrentHashMap<>();
  private final Pointer cluster;
  private final String conf;
  private final Map<String, Pointer> ioctxs = new ConcurrentHashMap<>();

  private Rados(Pointer cluster, String conf) {
    this.cluster = cluster;
    this.conf = conf;
  }

  /**
   * The client for {@code conf} as cephx {@code client.<user>} (null: admin; its keyring is the one
   * the conf names), connected once; every call times out after {@code timeout} s.
   */
  static Rados connect(String conf, String user, int timeout) throws IOException {
    try {
      return CLIENTS.computeIfAbsent(conf + "\0" + user + "\0" + timeout, k -> {
        try {
          return open(conf, user, timeout);
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      });
    } catch (java.io.UncheckedIOException e) {
      throw e.getCause();
    }
  }

  private static Rados open(String conf, String user, int timeout) throws IOException {
    Native.Librados lib = Native.rados();
    PointerByReference ref = new PointerByReference();
    Native.check(lib.rados_create(ref, user), "rados_create", null);
    Pointer c = ref.getValue();
    Native.check(lib.rados_conf_read_file(c, conf), "reading " + conf, "pass the client ceph.conf as ceph_conf");
    for (String opt : new String[] {"rados_osd_op_timeout", "rados_mon_op_timeout", "client_mount_timeout"}) {
      Native.check(lib.rados_conf_set(c, opt, Integer.toString(timeout)), "setting " + opt, null);
    }
    Native.check(lib.rados_connect(c), "connecting to Ceph with " + conf, "is the Ceph cluster running?");
    return new Rados(c, conf);
  }

  Pointer ioctx(String pool) throws IOException {
    Pointer io = ioctxs.get(pool);
    if (io != null) return io;
    synchronized (ioctxs) {
      io = ioctxs.get(pool);
      if (io == null) {
        PointerByReference ref = new PointerByReference();
        Native.check(Native.rados().rados_ioctx_create(cluster, pool, ref), "opening pool " + pool + " via " + conf,
            null);
        io = ref.getValue();
        ioctxs.put(pool, io);
      }
      return io;
    }
  }

  /** A synchronous class call whose reply fits {@code maxReply} bytes. */
  byte[] exec(String pool, String oid, String method, byte[] in, int maxReply) throws IOException {
    Memory out = new Memory(maxReply);
    int n = Native.check(Native.rados().rados_exec(ioctx(pool), oid, CLASS, method, in, in.length, out, maxReply),
        "sae." + method + " on object " + oid, "is the sae class installed on the OSDs?");
    return out.getByteArray(0, n);
  }

  /** Starts an asynchronous class call; the reply lives in librados memory until {@link Call#close}. */
  Call submit(String pool, String oid, String method, byte[] in) throws IOException {
    return new Call(ioctx(pool), oid, "sae." + method + " on", op -> {
      Call.Reply r = new Call.Reply();
      Native.rados().rados_read_op_exec(op, CLASS, method, in, in.length, r.buf, r.len, r.prval);
      return r;
    });
  }

  /** Starts an asynchronous read of a whole object of {@code size} bytes, into memory freed by {@link Call#close}. */
  Call read(String pool, String oid, long size) throws IOException {
    return new Call(ioctx(pool), oid, "reading", op -> {
      Call.Reply r = new Call.Reply();
      r.own = new Memory(Math.max(1, size));
      r.buf.setValue(r.own);
      Native.rados().rados_read_op_read(op, 0, size, r.own, r.len, r.prval);
      return r;
    });
  }

  /** One asynchronous read op (a class call or a plain read) and its reply buffer. */
  static final class Call implements AutoCloseable {
    /** Where the op puts its reply: a buffer (librados-allocated unless {@code own}), its length, its status. */
    static final class Reply {
      final PointerByReference buf = new PointerByReference(Pointer.NULL);
      final LongByReference len = new LongByReference(0);
      final IntByReference prval = new IntByReference(0);
      Memory own;
    }

    private final Native.Librados lib = Native.rados();
    private final Pointer op;
    private final Pointer completion;
    private final Reply reply;
    private final String what;
    final String oid;
    private boolean done;
    private boolean closed;

    private Call(Pointer io, String oid, String what, java.util.function.Function<Pointer, Reply> step)
        throws IOException {
      this.oid = oid;
      this.what = what;
      op = lib.rados_create_read_op();
      reply = step.apply(op);
      PointerByReference c = new PointerByReference();
      int r = lib.rados_aio_create_completion(null, null, null, c);
      completion = r < 0 ? null : c.getValue();
      if (r < 0) {
        done = true;
        close();
        Native.check(r, "rados_aio_create_completion", null);
      }
      r = lib.rados_aio_read_op_operate(op, io, completion, oid, 0);
      if (r < 0) {
        done = true;
        close();
        Native.check(r, what + " object " + oid, null);
      }
    }

    /** Whether the reply has arrived ({@link #await} would not wait). */
    boolean ready() {
      return done || lib.rados_aio_is_complete(completion) != 0;
    }

    /** Waits for the reply: a view of its buffer, valid until {@link #close}. */
    ByteBuffer await() throws IOException {
      if (!done) {
        lib.rados_aio_wait_for_complete(completion);
        done = true;
      }
      int r = lib.rados_aio_get_return_value(completion);
      if (r >= 0) r = reply.prval.getValue();
      Native.check(r, what + " object " + oid,
          r == -95 ? "the sae class is not installed on the OSDs (rados_deploy install_class)" : null);
      Pointer p = reply.buf.getValue();
      long n = reply.len.getValue();
      return p == null || n == 0 ? ByteBuffer.allocate(0) : p.getByteBuffer(0, n);
    }

    /** Waits for the call if it is still in flight, then frees the reply and the op. */
    @Override
    public void close() {
      if (closed) return;
      closed = true;
      if (!done && completion != null) lib.rados_aio_wait_for_complete(completion);
      done = true;
      if (completion != null) lib.rados_aio_release(completion);
      lib.rados_release_read_op(op);
      if (reply.own != null) {
        reply.own.close();
      } else {
        Pointer p = reply.buf.getValue();
        if (p != null) lib.rados_buffer_free(p);
      }
    }
  }
}
