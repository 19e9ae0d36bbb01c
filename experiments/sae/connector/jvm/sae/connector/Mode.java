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
  OFFLOAD("offload", true),
  /** The OSDs return every row and column, decoded and re-encoded; Spark filters (the thesis's
   * baseline). */
  NO_OFFLOAD("no-offload", false);

  /** The option's value that selects this mode. */
  final String option;
  /** Whether filters and projection are pushed into the OSDs. */
  final boolean pushdown;

  Mode(String option, boolean pushdown) {
    this.option = option;
    this.pushdown = pushdown;
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
