// Periodic work of each process: run once at start, then every ten minutes unless told otherwise.

/**
 * Runs `chores` one after another now and every `everyMs`; a chore that fails ends that round (the
 * next round tries again). The timer does not keep the process alive. Returns its stop.
 */
export function startHousekeeping(chores: (() => Promise<unknown>)[], everyMs = 10 * 60_000): () => void {
  const round = async () => {
    for (const chore of chores) await chore();
  };
  void round().catch(() => undefined);
  const timer = setInterval(() => void round().catch(() => undefined), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
