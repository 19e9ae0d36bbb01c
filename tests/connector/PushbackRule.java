package sae.connector;

/**
 * Drives mode auto's rule (Pushback.java) through scenarios for tests/connector/test_pushback.py:
 * each object's cost per byte is the scenario's for the way chosen, and a pushed object's reply
 * reports the scenario's OSD work, both measured {@code lag} objects after the choice (calls in
 * flight). Prints one line per scenario: its name and a string of the choices, 'p' pushed and
 * 'w' read whole.
 *
 * <p>Scenarios, in ns per stored byte (pushed: cost of which OSD work; whole: cost): pushed 1 of
 * which 0.5 and whole 3; pushed 3 of which 2.5 and whole 1; pushed 1 of 0.5 then, from object 100
 * on, 5 of 4.5 (the OSDs got short of CPU); pushed 4 of 3.5 then, from object 100 on, 1 of 0.5
 * (they got idle again); pushed 1 of 0.5 and whole 1.1; pushed 1 of 0.3 and whole 2.5, from
 * object 100 on both behind a queue of another tenant's calls that varies from 0 to 20 per
 * object (the OSDs got busy with calls, not short of CPU). Then one line per {@code tail-}
 * scenario: how many objects a task keeps back at the end of its list ({@link Pushback#tail}).
 */
public final class PushbackRule {
  interface Scenario {
    /** {cost, OSD work} of the object when {@code pushed}, else {cost, 0}. */
    double[] of(boolean pushed, int object);
  }

  public static void main(String[] args) {
    int lag = Integer.parseInt(args[0]), objects = Integer.parseInt(args[1]);
    run("push-cheaper", lag, objects, (p, i) -> p ? new double[] {1, 0.5} : new double[] {3, 0});
    run("whole-cheaper", lag, objects, (p, i) -> p ? new double[] {3, 2.5} : new double[] {1, 0});
    run("osds-get-busy", lag, objects, (p, i) -> p ? (i < 100 ? new double[] {1, 0.5} : new double[] {5, 4.5})
        : new double[] {3, 0});
    run("osds-get-idle", lag, objects, (p, i) -> p ? (i < 100 ? new double[] {4, 3.5} : new double[] {1, 0.5})
        : new double[] {2, 0});
    run("close", lag, objects, (p, i) -> p ? new double[] {1, 0.5} : new double[] {1.1, 0});
    // the saving of one reply: wall 1000 ns, 100 ns CPU of which 50 scan work, alone; with 2.5 of
    // the query's calls running on average (itself included); with no client counted; no stats;
    // no wall time
    System.out.println("osd-work " + Pushback.osdWork(1000, 100, 50, 1000) + " "
        + Pushback.osdWork(1000, 100, 50, 2500) + " " + Pushback.osdWork(1000, 100, 50, 0) + " "
        + Pushback.osdWork(1000, 0, 0, 1000) + " " + Pushback.osdWork(0, 100, 50, 0));
    tail("tail-idle-osd", 1.0, 0.8, 0.6, 3.0, Double.NaN, 3.4);
    tail("tail-busy-osd", 5.0, 4.5, 4.2, 3.0, Double.NaN, 3.4);
    tail("tail-busy-osd-cheap-tail", 5.0, 4.5, 4.2, 3.0, 1.0, 3.4);
    tail("tail-busy-osd-dear-tail", 5.0, 4.5, 4.2, 3.0, 9.0, 3.4);
    tail("tail-whole-replies", 5.0, 0.0, 4.2, 3.0, Double.NaN, 3.4);
    tail("tail-tenant-queue", 5.0, 1.0, 4.5, 6.0, Double.NaN, 3.4);
    tail("tail-no-wait-measured", 5.0, 4.5, Double.NaN, 3.0, Double.NaN, 3.4);
    tail("tail-uneven", 5.0, 4.5, 4.2, 3.0, Double.NaN, 3.4, 1, 1, 4, 1);
    tail("tail-calls-explain-the-stretch", 5.0, 4.5, 4.2, 3.0, Double.NaN, 1.0);
    tail("tail-calls-not-counted", 5.0, 4.5, 4.2, 3.0, Double.NaN, Double.NaN);
    run("queue-busy", lag, objects, (p, i) -> {
      double queue = i < 100 ? 0 : 20.0 * ((i * 7919L) % 11) / 10;
      return p ? new double[] {queue + 1, 0.3} : new double[] {queue + 2.5, 0};
    });
  }

  /**
   * Prints how many objects the rule keeps back at the end of a task's list of four equal objects
   * (or of the given sizes, in MB) after one object each way, per stored byte: a pushed one that
   * cost {@code pushed}, of which {@code osd} the OSD's scan work and {@code wait} waiting for the
   * reply (NaN: no wait measured), one read whole that cost {@code whole}, and one kept back that
   * cost {@code kept} (NaN: none kept back yet); the pushed call stretched {@code stretch} times
   * the calls that ran beside it (its wall time over its CPU time, 2 calls beside it; NaN: its
   * reply counted no calls).
   */
  private static void tail(String name, double pushed, double osd, double wait, double whole, double kept,
      double stretch, double... sizes) {
    Pushback rule = Pushback.of(name);
    long mb = 1_000_000;
    rule.push();   // the rule's first two choices: pushed, then read whole
    rule.push();
    rule.measured(true, Math.round(pushed * mb), mb, Math.round(osd * mb));
    if (!Double.isNaN(wait)) rule.waited(Math.round(wait * mb), mb);
    rule.measured(false, Math.round(whole * mb), mb, 0);
    if (!Double.isNaN(kept)) rule.measuredTail(Math.round(kept * mb), mb);
    long cpu = 1_000_000, wall = Math.round(2 * cpu * (Double.isNaN(stretch) ? 1 : stretch));
    rule.stretched(wall, cpu, Double.isNaN(stretch) ? 0 : 2 * wall);
    long[] bytes = new long[sizes.length == 0 ? 4 : sizes.length];
    for (int i = 0; i < bytes.length; i++) bytes[i] = Math.round((sizes.length == 0 ? 1 : sizes[i]) * mb);
    System.out.println(name + " " + rule.tail(bytes));
  }

  private static void run(String name, int lag, int objects, Scenario scenario) {
    Pushback rule = Pushback.of(name);
    boolean[] chosen = new boolean[objects];
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < objects + lag; i++) {
      int done = i - lag;   // the object whose reply is read now
      if (done >= 0) {
        double[] c = scenario.of(chosen[done], done);
        rule.measured(chosen[done], Math.round(c[0] * 1_000_000), 1_000_000, Math.round(c[1] * 1_000_000));
      }
      if (i < objects) {
        chosen[i] = rule.push();
        out.append(chosen[i] ? 'p' : 'w');
      }
    }
    System.out.println(name + " " + out);
  }
}
