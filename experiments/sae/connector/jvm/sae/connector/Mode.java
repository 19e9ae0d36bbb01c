package sae.connector;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * How the data source reads (option {@code mode}): each constant is one reader of sae's that reads
 * through the connector (its entry in sae/planning/readers.py names the constant's option value) and says
 * what the reader leaves to the OSDs.
 */
enum Mode {
  /** The filters the class runs exactly and the query's columns go to the OSDs; an object whose
   * every row passes, asked for every column, may come back as stored (option whole_objects). */
  OFFLOAD("offload", true, false),
  /** Per object, as OFFLOAD, or the object read whole and scanned in the task with the class's own
   * scan ({@link LocalScan}), whichever a cost model says costs less: the OSD's reported work on
   * the scan's earlier objects against what reading them whole added ({@link Pushback}). */
  AUTO("auto", true, true),
  /** The OSDs return every row and column, decoded and re-encoded; Spark filters (the thesis's
   * baseline). */
  NO_OFFLOAD("no-offload", false, false);

  /** The option's value that selects this mode. */
  final String option;
  /** Whether filters and projection are pushed into the OSDs. */
  final boolean pushdown;
  /** Whether each object may instead be read whole and scanned in the task (pushback). */
  final boolean pushback;

  Mode(String option, boolean pushdown, boolean pushback) {
    this.option = option;
    this.pushdown = pushdown;
    this.pushback = pushback;
  }

  /** The mode an option value names; IllegalArgumentException naming the option otherwise. */
  static Mode parse(String value) {
    String v = value.strip().toLowerCase(Locale.ROOT);
    for (Mode m : values()) {
      if (m.option.equals(v)) return m;
    }
    throw Options.bad("mode", value, "use one of " + Arrays.stream(values()).map(m -> m.option)
        .collect(Collectors.joining(", ")));
  }
}
