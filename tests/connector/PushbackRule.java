package sae.connector;

/**
 * Drives mode auto's rule (Pushback.java) through scenarios for tests/connector/test_pushback.py:
 * each object's cost per byte is the scenario's for the way chosen, measured {@code lag} objects
 * after the choice (calls in flight). Prints one line per scenario: its name and a string of the
 * choices, 'p' pushed and 'w' read whole.
 *
 * <p>Scenarios: pushed 1 and whole 3 ns/byte; pushed 3 and whole 1; pushed 1 then, from object
 * 100 on, 5 (the OSDs got busy); pushed 4 then, from object 100 on, 1 (they got idle again);
 * pushed 1 and whole 1.1.
 */
public final class PushbackRule {
  interface Cost {
    double of(boolean pushed, int object);
  }

  public static void main(String[] args) {
    int lag = Integer.parseInt(args[0]), objects = Integer.parseInt(args[1]);
    run("push-cheaper", lag, objects, (p, i) -> p ? 1 : 3);
    run("whole-cheaper", lag, objects, (p, i) -> p ? 3 : 1);
    run("osds-get-busy", lag, objects, (p, i) -> p ? (i < 100 ? 1 : 5) : 3);
    run("osds-get-idle", lag, objects, (p, i) -> p ? (i < 100 ? 4 : 1) : 2);
    run("close", lag, objects, (p, i) -> p ? 1 : 1.1);
  }

  private static void run(String name, int lag, int objects, Cost cost) {
    Pushback rule = Pushback.of(name);
    boolean[] chosen = new boolean[objects];
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < objects + lag; i++) {
      int done = i - lag;   // the object whose reply is read now
      if (done >= 0) rule.measured(chosen[done], Math.round(cost.of(chosen[done], done) * 1_000_000), 1_000_000);
      if (i < objects) {
        chosen[i] = rule.push();
        out.append(chosen[i] ? 'p' : 'w');
      }
    }
    System.out.println(name + " " + out);
  }
}
