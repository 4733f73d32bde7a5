package rmqd.it;

/** The scenario ran but its outcome is wrong (timeout, failed sends); the partial result is still printed. */
final class ScenarioFailure extends Exception {
    ScenarioFailure(String msg) {
        super(msg);
    }
}
