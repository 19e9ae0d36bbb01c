package sae.connector;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * The data source's option checks (Options.java, with the rendered OptionSpec.java and Mode.java)
 * on option sets read from stdin, one per line as tab-separated key=value pairs: prints "ok" or
 * "refused <message>" per line.
 */
public final class OptionsCheck {
  private OptionsCheck() {}

  public static void main(String[] args) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line = in.readLine(); line != null; line = in.readLine()) {
      Map<String, String> options = new HashMap<>();
      for (String pair : line.split("\t")) {
        if (!pair.isEmpty()) options.put(pair.substring(0, pair.indexOf('=')), pair.substring(pair.indexOf('=') + 1));
      }
      try {
        new Options(options);
        System.out.println("ok");
      } catch (IllegalArgumentException e) {
        System.out.println("refused " + e.getMessage());
      }
    }
  }
}
