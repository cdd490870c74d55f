// The one registry of trial types on the browser side: name -> module.  Each module is the
// whole browser side of its type, as one object:
//   name                          the trial_type the server presents and expects back
//   run(trial, ctx)               shows the trial; resolves to the data posted for it
//                                 (ctx: {session, simulate, monitor}; simulate is null for
//                                 a person; monitor: monitor.js's TrialMonitor, started by
//                                 the runner before the trial shows anything, which run
//                                 finishes once the answer is in and puts in its data)
//   feedback(data, verdict)       a practice trial's feedback screen, once stored (verdict:
//                                 the server's {correct} from its reply, or null; runner.js)
//   simulate(sim, trial, state)   the simulated participant's answer (sim: simulate.js's
//                                 Simulation; state: what run hands it once the trial shows)
//   instructions(session)         this type's paragraphs of the instructions screen
// The names are the server's BROWSER_TYPES (experiments/trial_types/: catch trials are
// presented as "aot"); tests/browser/test_trial_registry.py checks that they agree.
// The order is the order of the instructions' paragraphs (flow.js).
import aot from "./aot.js";
import frameOrder from "./frame_order.js";

export const TRIAL_TYPES = Object.fromEntries([aot, frameOrder].map((type) => [type.name, type]));
