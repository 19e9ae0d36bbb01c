package sae.connector;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Predicate;

/**
 * The data source's options (all strings), validated; IllegalArgumentException naming the option
 * and the fix otherwise. The tuning options (compression, batch_size, objects_per_partition,
 * whole_objects, operators, pushback, calls_in_flight, max_reply, timeout; object_size, for writes) and their rules are
 * {@link OptionSpec}'s, rendered from sae/connector/options.json, which sae checks experiments
 * against when it plans; the others:
 *
 * <pre>
 * path                   CephFS file or directory (load(path)); *.parquet, *.arrow (Arrow IPC) and *.csv files are
 *                        read (CSV: a header line, columns by position of the schema given with spark.read.schema)
 * mode                   how the OSDs serve the scan ({@link Mode}, one constant per connector reader of sae's):
 *                        offload (default): filter and project in the OSDs; auto: per object, as offload or the
 *                        object read whole and scanned in the task (the class's scan, scan_library), whichever
 *                        the task measured cheaper (Pushback.java); no-offload: the OSDs return every row and
 *                        column and Spark filters
 * scan_library           mode auto: the absolute path, on every Spark node, of the class's scan as a client
 *                        library (libsae_scan.so, rados_deploy's install_scan_library; sae's build passes it)
 * columns                comma-separated columns to narrow the table to (queries are pruned anyway)
 * ceph_conf              client ceph.conf (default $CEPH_CONF)
 * ceph_user              cephx client id, e.g. sae-scan for client.sae-scan (default admin); its
 *                        keyring is the one ceph_conf names for it
 * </pre>
 */
final class Options implements Serializable {
  private static final long serialVersionUID = 1L;
  static final String FORMAT = "sae-ceph";
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
  /** Writes: bytes per file and object (0: the output directory's layout, else {@link #DEFAULT_OBJECT_SIZE}). */
  final int objectSize;
  /** The object size of a write into a directory without a layout: sae's dataset default. */
  static final int DEFAULT_OBJECT_SIZE = 8 << 20;

  /** A tuning option that is its default ({@code fallback}) or a whole number from min to max. */
  record Int(String name, long min, long max, long fallback, Predicate<Mode> modes) {}

  /** A tuning option that is one of its choices. */
  record Choice(String name, List<String> choices, String fallback, Predicate<Mode> modes) {}

  /** A tuning option that is true or false. */
  record Flag(String name, boolean fallback, Predicate<Mode> modes) {}

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
    pushback = choice(o, OptionSpec.PUSHBACK);
    compression = choice(o, OptionSpec.COMPRESSION);
    wholeObjects = flag(o, OptionSpec.WHOLE_OBJECTS);
    operators = flag(o, OptionSpec.OPERATORS);
    if (!compression.equals("none") && !ArrowTypes.compressedReplies()) {
      bad("compression", compression, "this Spark ships no Arrow compression module (arrow-compression), so its "
          + "tasks cannot read compressed replies; use none");
    }
    batchRows = (int) number(o, OptionSpec.BATCH_SIZE);
    objectsPerPartition = (int) number(o, OptionSpec.OBJECTS_PER_PARTITION);
    callsInFlight = (int) number(o, OptionSpec.CALLS_IN_FLIGHT);
    maxReply = number(o, OptionSpec.MAX_REPLY);
    timeout = (int) number(o, OptionSpec.TIMEOUT);
    objectSize = (int) number(o, OptionSpec.OBJECT_SIZE);
    if (objectSize % (64 << 10) != 0) {
      bad("object_size", o.get("object_size"), "use a multiple of 64 KiB (65536), as CephFS layouts need");
    }
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

  /** The value of option {@code name} if given, refused outside the modes it applies to; null if not given. */
  private String given(Map<String, String> o, String name, Predicate<Mode> modes) {
    String v = o.get(name);
    if (v != null && !modes.test(mode)) bad(name, v, "it applies to mode " + Mode.names(modes) + " only");
    return v;
  }

  private String choice(Map<String, String> o, Choice spec) {
    String given = given(o, spec.name(), spec.modes());
    String v = given == null ? spec.fallback() : given.strip().toLowerCase(Locale.ROOT);
    if (!spec.choices().contains(v)) bad(spec.name(), v, "use " + oneOf(spec.choices()));
    return v;
  }

  private boolean flag(Map<String, String> o, Flag spec) {
    String v = given(o, spec.name(), spec.modes());
    if (v == null) return spec.fallback();
    switch (v.toLowerCase(Locale.ROOT)) {
      case "true", "1", "yes", "on" -> {
        return true;
      }
      case "false", "0", "no", "off" -> {
        return false;
      }
      default -> throw bad(spec.name(), v, "use true or false");
    }
  }

  private long number(Map<String, String> o, Int spec) {
    String v = given(o, spec.name(), spec.modes());
    if (v == null) return spec.fallback();
    String range = spec.min() + ".." + spec.max()
        + (spec.fallback() < spec.min() ? " (or " + spec.fallback() + ", the default)" : "");
    long n;
    try {
      n = Long.parseLong(v.strip());
    } catch (NumberFormatException e) {
      throw bad(spec.name(), v, "use a whole number in " + range);
    }
    if (n != spec.fallback() && (n < spec.min() || n > spec.max())) throw bad(spec.name(), v, "use a whole number in " + range);
    return n;
  }

  /** "a, b or c". */
  private static String oneOf(List<String> choices) {
    int last = choices.size() - 1;
    return last == 0 ? choices.get(0) : String.join(", ", choices.subList(0, last)) + " or " + choices.get(last);
  }
}
