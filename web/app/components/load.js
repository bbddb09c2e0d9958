// Loading server data for a view: one request per panel, re-run when its inputs change,
// the previous answer kept on screen while the next one comes (no flashing spinners).
import { useEffect, useState, useCallback, useRef } from "preact/hooks";

/** `{data, problem, loading, reload}` for `fetcher(signal)`, re-run whenever `inputs` change. */
export function useLoad(fetcher, inputs) {
  const [state, setState] = useState({ data: undefined, problem: null, loading: true });
  const generation = useRef(0);
  const run = useCallback(() => {
    const mine = ++generation.current;
    const controller = new AbortController();
    setState((old) => ({ ...old, loading: true }));
    fetcher(controller.signal).then(
      (data) => { if (mine === generation.current) setState({ data, problem: null, loading: false }); },
      (problem) => {
        if (problem.name === "AbortError" || mine !== generation.current) return;
        setState((old) => ({ ...old, problem, loading: false }));
      },
    );
    return () => controller.abort();
  }, inputs);
  useEffect(run, [run]);
  return { ...state, reload: run };
}

/** Calls `task` every `ms` while the page is visible (pages that refresh by themselves). */
export function useInterval(task, ms) {
  const latest = useRef(task);
  latest.current = task;
  useEffect(() => {
    const id = setInterval(() => { if (!document.hidden) latest.current(); }, ms);
    return () => clearInterval(id);
  }, [ms]);
}
