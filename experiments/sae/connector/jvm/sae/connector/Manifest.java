package sae.connector;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The write path's commit record (docs/connector.md, "Writing"): a job commits by writing one
 * manifest, {@code _sae-write-<seq>-<job>.json}, into its output directory, naming the files it
 * wrote. A manifest counts only when it parses, its fields match its name and its sums, and it
 * ends with the end marker, so a partly written one is ignored. What a directory holds for
 * readers ({@link #state}) follows from its file names and manifests alone: this class and
 * sae/connector/manifest.py implement the same rules.
 */
final class Manifest {
  private Manifest() {}

  static final String FORMAT = "sae-write";
  static final int VERSION = 1;
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Pattern NAME = Pattern.compile("_sae-write-(\\d{10})-([0-9a-f]{32})\\.json");
  /** A file the writer names: {@code part-<job>-<partition>-<task>-<attempt>-<n>.parquet}. */
  private static final Pattern PART = Pattern.compile("part-([0-9a-f]{32})-\\d+-\\d+-\\d+-\\d+\\.parquet");

  /** A committed file: its name in the directory, rows and bytes. */
  record Entry(String name, long rows, long bytes) implements Serializable {}

  /** A valid manifest. */
  record Parsed(String name, long seq, String job, boolean overwrite, List<Entry> files, List<String> adopted) {}

  /**
   * What a directory holds: {@code visible}, the files readers read (sorted); {@code committed},
   * whether any valid manifest decided that (else every data file but the writer's parts is
   * visible, as in a directory data_deploy wrote); {@code leftovers}, the data files and
   * manifests no reader reads (what a failed or killed job left; superseded manifests), sorted.
   */
  record State(List<String> visible, boolean committed, List<String> leftovers, long nextSeq) {}

  static String name(long seq, String job) {
    return String.format("_sae-write-%010d-%s.json", seq, job);
  }

  static boolean isManifest(String name) {
    return NAME.matcher(name).matches();
  }

  /** Whether {@code name} is a file the writer wrote for job {@code job} (null: for any job). */
  static boolean isPart(String name, String job) {
    Matcher m = PART.matcher(name);
    return m.matches() && (job == null || m.group(1).equals(job));
  }

  static String partName(String job, int partition, long task, int attempt, int n) {
    return "part-" + job + "-" + partition + "-" + task + "-" + attempt + "-" + n + ".parquet";
  }

  /** The manifest's text: every field, the end marker last. */
  static byte[] encode(long seq, String job, boolean overwrite, List<Entry> files, List<String> adopted) {
    ObjectNode o = JSON.createObjectNode();
    o.put("format", FORMAT).put("version", VERSION).put("seq", seq).put("job", job)
        .put("mode", overwrite ? "overwrite" : "append");
    ArrayNode list = o.putArray("files");
    long rows = 0, bytes = 0;
    for (Entry e : files) {
      list.addObject().put("name", e.name()).put("rows", e.rows()).put("bytes", e.bytes());
      rows += e.rows();
      bytes += e.bytes();
    }
    ArrayNode old = o.putArray("adopted");
    adopted.forEach(old::add);
    o.put("rows", rows).put("bytes", bytes).put("end", FORMAT);
    try {
      return JSON.writerWithDefaultPrettyPrinter().writeValueAsBytes(o);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The manifest {@code name} holding {@code text}, or null when it does not count. */
  static Parsed parse(String name, byte[] text) {
    Matcher m = NAME.matcher(name);
    if (!m.matches() || text == null) return null;
    try {
      JsonNode o = JSON.readTree(new String(text, StandardCharsets.UTF_8));
      if (o == null || !FORMAT.equals(o.path("format").asText()) || o.path("version").asInt() != VERSION
          || o.path("seq").asLong(-1) != Long.parseLong(m.group(1)) || !m.group(2).equals(o.path("job").asText())
          || !FORMAT.equals(o.path("end").asText())) {
        return null;
      }
      String mode = o.path("mode").asText();
      if (!mode.equals("append") && !mode.equals("overwrite")) return null;
      List<Entry> files = new ArrayList<>();
      long rows = 0, bytes = 0;
      for (JsonNode f : o.path("files")) {
        if (!f.path("name").isTextual() || !f.path("rows").canConvertToLong() || !f.path("bytes").canConvertToLong()) {
          return null;
        }
        files.add(new Entry(f.get("name").asText(), f.get("rows").asLong(), f.get("bytes").asLong()));
        rows += f.get("rows").asLong();
        bytes += f.get("bytes").asLong();
      }
      if (rows != o.path("rows").asLong(-1) || bytes != o.path("bytes").asLong(-1)) return null;
      List<String> adopted = new ArrayList<>();
      for (JsonNode a : o.path("adopted")) adopted.add(a.asText());
      return new Parsed(name, Long.parseLong(m.group(1)), m.group(2), mode.equals("overwrite"), files, adopted);
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /** Reads a manifest's bytes (null if it cannot be read). */
  interface Reader {
    byte[] read(String name) throws IOException;
  }

  /**
   * The state of a directory holding {@code names} (its entries' names), whose data files end in
   * one of {@code suffixes}; manifests are read through {@code reader}. Valid manifests in
   * sequence order from the last overwrite on make the committed set: their files and the files
   * they adopted. A file a manifest names that the directory lacks is an IOException (committed
   * output lost).
   */
  static State state(List<String> names, List<String> suffixes, Reader reader) throws IOException {
    Set<String> present = new TreeSet<>(names);
    List<String> data = names.stream().filter(n -> suffixes.stream().anyMatch(n::endsWith)).sorted().toList();
    List<Parsed> valid = new ArrayList<>();
    List<String> manifests = new ArrayList<>();
    long next = 1;
    for (String n : names) {
      if (!isManifest(n)) continue;
      manifests.add(n);
      Parsed p = parse(n, reader.read(n));
      next = Math.max(next, Long.parseLong(n.substring(11, 21)) + 1);
      if (p != null) valid.add(p);
    }
    Set<String> leftovers = new TreeSet<>(manifests);
    if (valid.isEmpty()) {
      List<String> visible = data.stream().filter(n -> !isPart(n, null)).toList();
      data.stream().filter(n -> isPart(n, null)).forEach(leftovers::add);
      return new State(visible, false, List.copyOf(leftovers), next);
    }
    valid.sort(Comparator.comparingLong(Parsed::seq));
    int start = 0;
    for (int i = 0; i < valid.size(); i++) {
      if (valid.get(i).overwrite()) start = i;
    }
    Set<String> visible = new LinkedHashSet<>();
    for (Parsed p : valid.subList(start, valid.size())) {
      leftovers.remove(p.name());
      for (String f : p.adopted()) visible.add(f);
      for (Entry e : p.files()) visible.add(e.name());
    }
    for (String f : visible) {
      if (!present.contains(f)) {
        throw new IOException("committed file " + f + " is missing (a manifest names it); the output lost data: "
            + "write it again");
      }
    }
    data.stream().filter(n -> !visible.contains(n)).forEach(leftovers::add);
    return new State(new TreeSet<>(visible).stream().toList(), true, List.copyOf(leftovers), next);
  }
}
