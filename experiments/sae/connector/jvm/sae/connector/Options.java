package sae.connector;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The data source's options (all strings), validated; IllegalArgumentException naming the option
 * and the fix otherwise.
 *
 * <pre>
 * path                   CephFS file or directory (load(path)); *.parquet, *.arrow (Arrow IPC) and *.csv files are
 *                        read (CSV: a header line, columns by position of the schema given with spark.read.schema)
 * mode                   how the OSDs serve the scan (Mode.java): offload (default): filter and project in
 *                        the OSDs; auto: per object, as offload or the object read whole and scanned in
 *                        the task (the class's scan, scan_library), whichever the task measured cheaper
 *                        (Pushback.java); no-offload: the OSDs return every row and column and Spark filters
 * scan_library           mode auto: the absolute path, on every Spark node, of the class's scan as a client
 *                        library (libsae_scan.so, rados_deploy's install_scan_library; sae's build passes it)
 * pushback               mode auto: cost (default): each object the way the cost model says is cheaper;
 *                        never: every object pushed into its OSD; always: every object read whole and
 *                        scanned in the task; half: the last half of each task's objects kept back, read
 *                        whole and scanned while the others' pushed replies are awaited
 * compression            reply body compression: none, lz4, zstd (default: see DEFAULT_COMPRESSION)
 * whole_objects          with mode offload, true (default): an object whose every row passes, when every column
 *                        is asked for, comes back as stored (Parquet, decoded by Spark's reader) instead
 *                        of decoded and re-encoded in the OSD; false: always Arrow IPC
 * operators              with mode offload or auto, true (default): a GROUP BY and COUNT/SUM/MIN/MAX (AVG as SUM and
 *                        COUNT) run in the OSDs as per-object partials Spark merges, and an ORDER BY ...
 *                        LIMIT or LIMIT as each object's top rows, where the class computes them exactly;
 *                        false: the OSDs return the filtered rows and Spark does the rest
 * batch_size             rows per Arrow batch (default 65536)
 * columns                comma-separated columns to narrow the table to (queries are pruned anyway)
 * ceph_conf              client ceph.conf (default $CEPH_CONF)
 * ceph_user              cephx client id, e.g. sae-scan for client.sae-scan (default admin); its
 *                        keyring is the one ceph_conf names for it
 * objects_per_partition  objects per task (default 0: offload one task per slot, auto and
 *                        no-offload objects packed by bytes as Spark packs files)
 * calls_in_flight        asynchronous class calls a task keeps in flight (default 4)
 * max_reply              largest reply accepted, bytes (default 8x the object size, at least 64 MiB)
 * timeout                seconds before a Ceph call fails instead of hanging (default 120)
 * </pre>
 */
final class Options implements Serializable {
  private static final long serialVersionUID = 1L;
  static final String FORMAT = "sae-ceph";
  static final String DEFAULT_COMPRESSION = "zstd";   // measured: docs/connector.md
  final String path;
  final Mode mode;
  final String scanLibrary;
  /** Mode auto's choice: cost, never, always or half (see the options above). */
  final String pushback;
  final String compression;
  final boolean wholeObjects;
  final boolean operators;
  final int batchRows;
  final List<String> columns;
  final String cephConf;
  final String cephUser;
  final int objectsPerPartition;
  final int callsInFlight;
  final long maxReply;
  final int timeout;

  Options(Map<String, String> raw) {
    Map<String, String> o = new java.util.HashMap<>();
    raw.forEach((k, v) -> o.put(k.toLowerCase(Locale.ROOT), v));
    path = o.get("path");
    if (path == null || path.isEmpty()) bad("path", path, "give the CephFS directory: load('/data/taxi')");
    if (o.containsKey("offload")) {
      bad("offload", o.get("offload"), "the option is now mode: use mode=offload or mode=no-offload");
    }
    mode = Mode.parse(o.getOrDefault("mode", Mode.OFFLOAD.option));
    scanLibrary = o.get("scan_library");
    if (mode.pushback && (scanLibrary == null || !scanLibrary.startsWith("/") || !scanLibrary.endsWith(".so"))) {
      bad("scan_library", scanLibrary, "mode auto scans the objects it reads whole with the class's scan in the "
          + "task: give the absolute path of libsae_scan.so on the Spark nodes (rados_deploy's install_scan_library "
          + "builds it; sae's connector build passes it)");
    }
    pushback = o.getOrDefault("pushback", "cost").strip().toLowerCase(Locale.ROOT);
    if (!List.of("cost", "never", "always", "half").contains(pushback)) {
      bad("pushback", pushback, "use cost, never, always or half");
    }
    if (!mode.pushback && o.containsKey("pushback")) bad("pushback", pushback, "it applies to mode auto only");
    compression = o.getOrDefault("compression", DEFAULT_COMPRESSION).toLowerCase(Locale.ROOT);
    wholeObjects = bool(o.getOrDefault("whole_objects", "true"), "whole_objects");
    operators = bool(o.getOrDefault("operators", "true"), "operators");
    if (!Protocol.CODECS.contains(compression)) bad("compression", compression, "use none, lz4 or zstd");
    if (!compression.equals("none") && !ArrowTypes.compressedReplies()) {
      bad("compression", compression, "this Spark ships no Arrow compression module (arrow-compression), so its "
          + "tasks cannot read compressed replies; use none");
    }
    batchRows = (int) number(o.getOrDefault("batch_size", "65536"), "batch_size", 1, 1 << 24);
    objectsPerPartition = (int) number(o.getOrDefault("objects_per_partition", "0"), "objects_per_partition", 0,
        1 << 16);
    callsInFlight = (int) number(o.getOrDefault("calls_in_flight", "4"), "calls_in_flight", 1, 256);
    maxReply = number(o.getOrDefault("max_reply", "0"), "max_reply", 0, 1L << 31);
    timeout = (int) number(o.getOrDefault("timeout", "120"), "timeout", 1, 86400);
    String conf = o.getOrDefault("ceph_conf", System.getenv("CEPH_CONF"));
    if (conf == null || conf.isEmpty()) bad("ceph_conf", null, "pass .option('ceph_conf', PATH) or set CEPH_CONF");
    cephConf = conf;
    cephUser = o.get("ceph_user");
    if (cephUser != null && !cephUser.matches("[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")) {
      bad("ceph_user", cephUser, "give a cephx client id such as sae-scan (letters, digits, '_', '.', '-')");
    }
    columns = new ArrayList<>();
    for (String c : o.getOrDefault("columns", "").split(",")) {
      if (!c.isBlank()) columns.add(c.strip());
    }
  }

  /**
   * Whether aggregates and top-k may be pushed (option operators, modes offload and auto: auto runs
   * the same scan in the task on the objects it reads whole).
   */
  boolean pushesOperators() {
    return operators && mode.pushdown;
  }

  /** Whether mode auto's cost model chooses the way of each object (option pushback=cost), not the option. */
  boolean costModel() {
    return mode.pushback && pushback.equals("cost");
  }

  /** The reply limit for an object of {@code size} bytes. */
  long replyLimit(long size) {
    return maxReply > 0 ? maxReply : Math.min(1L << 30, Math.max(64L << 20, 8 * size));
  }

  static IllegalArgumentException bad(String name, String value, String fix) {
    throw new IllegalArgumentException(FORMAT + " option " + name + "=" + (value == null ? "None" : "'" + value + "'")
        + " is invalid; " + fix);
  }

  private static boolean bool(String v, String name) {
    switch (v.toLowerCase(Locale.ROOT)) {
      case "true", "1", "yes", "on" -> {
        return true;
      }
      case "false", "0", "no", "off" -> {
        return false;
      }
      default -> throw bad(name, v, "use true or false");
    }
  }

  private static long number(String v, String name, long lo, long hi) {
    long n;
    try {
      n = Long.parseLong(v.strip());
    } catch (NumberFormatException e) {
      throw bad(name, v, "use a whole number in " + lo + ".." + hi);
    }
    if (n < lo || n > hi) throw bad(name, v, "use a whole number in " + lo + ".." + hi);
    return n;
  }
}
