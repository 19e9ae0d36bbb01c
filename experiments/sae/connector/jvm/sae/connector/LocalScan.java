package sae.connector;

import com.sun.jna.Library;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The class's scan run in this task over an object read whole (mode auto's pushback): rados_deploy's
 * client library ({@code libsae_scan.so}, option {@code scan_library}) is the class's own scan
 * core behind one C call, so the reply is the one the OSD would have sent (filter, projection,
 * aggregates, top-k alike) and is read as a pushed object's reply is.
 */
final class LocalScan implements AutoCloseable {
  interface Api extends Library {
    int sae_scan_local(Pointer object, long objectSize, byte[] request, long requestSize, PointerByReference reply,
        LongByReference replySize);

    void sae_scan_free(Pointer reply);
  }

  private static final Map<String, Api> LOADED = new ConcurrentHashMap<>();
  private final Api api;
  private Pointer reply;
  private final long size;

  private LocalScan(Api api, Pointer reply, long size) {
    this.api = api;
    this.reply = reply;
    this.size = size;
  }

  /**
   * Scans {@code object} (a direct buffer: the whole object as stored) with {@code request}; the
   * reply (or the class's error frame) lives in native memory until {@link #close}.
   */
  static LocalScan run(String library, ByteBuffer object, byte[] request) throws IOException {
    Api api = LOADED.computeIfAbsent(library, LocalScan::load);
    PointerByReference out = new PointerByReference();
    LongByReference n = new LongByReference();
    Pointer data = object.capacity() == 0 ? Pointer.NULL : com.sun.jna.Native.getDirectBufferPointer(object);
    Native.check(api.sae_scan_local(data, object.remaining(), request, request.length, out, n),
        "scanning an object read whole with " + library, null);
    return new LocalScan(api, out.getValue(), n.getValue());
  }

  private static Api load(String library) {
    try {
      return com.sun.jna.Native.load(library, Api.class);
    } catch (UnsatisfiedLinkError e) {
      throw new IllegalStateException("[" + Native.host() + " sae-ceph] cannot load scan_library " + library + " ("
          + e.getMessage() + "); build it on every Spark node (rados_deploy's install_scan_library)", e);
    }
  }

  /** The reply: a view of native memory, valid until {@link #close}. */
  ByteBuffer reply() {
    return reply.getByteBuffer(0, size);
  }

  @Override
  public void close() {
    if (reply != null) api.sae_scan_free(reply);
    reply = null;
  }
}
