(* The ot-wor rule (rheotheory.verify.rules.ot_wor), the verifier of rheo-adaptive
   (docs/theory.md section 2.7): deterministic candidates plus several sampled ones. The
   sampled candidates are tried first by the sequential rule, against the original target and
   ignoring the deterministic ones; if all are rejected, Y drawn from the last residual
   continues into the first deterministic candidate holding it, or is emitted. Given the
   candidates the output token has the law of the sequential rule on the sampled candidates
   alone (ot_wor_output), so ot-wor is lossless for every candidate scheme (ot_wor_lossless),
   in particular for a head followed by samples without replacement (ot_wor_lossless_head);
   its transition is a law (ot_wor_transition). *)
From mathcomp Require Import all_ssreflect ssralg ssrnum.
From Rheo Require Import Laws Sequential Ot.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import Order.TTheory GRing.Theory Num.Theory.
Local Open Scope ring_scope.

Section OtWor.

Variable R : realFieldType.
Variable V : nat.

Notation vec := ('I_V -> R).
Notation cand := (cand R V).

(* the sampled candidates, in creation order, and the tokens of the deterministic ones *)
Definition samps (cs : seq cand) : seq cand := filter is_samp cs.

Definition det_toks (cs : seq cand) : seq 'I_V := [seq token c | c <- cs & ~~ is_samp c].

(* the continue weights: each sampled candidate keeps its weight from the recursive rejection
   (ws, in order); a deterministic candidate gets the residual mass m of its token if no
   sampled candidate and no earlier deterministic one holds that token (`seen`) *)
Fixpoint wor_cont (ws : seq R) (m : vec) (seen : seq 'I_V) (cs : seq cand) : seq R :=
  match cs with
  | [::] => [::]
  | Samp _ _ :: cs' => head 0 ws :: wor_cont (behead ws) m seen cs'
  | Det x :: cs' => (if x \in seen then 0 else m x) :: wor_cont ws m (x :: seen) cs'
  end.

(* rules.ot_wor: the sampled candidates are tried first, by the sequential rule against the
   original target and ignoring the deterministic ones; if all are rejected, Y drawn from the
   last residual continues into the first deterministic candidate holding it, or is emitted.
   Without a sampled candidate it is onehot. *)
Definition ot_wor (p : vec) (cs : seq cand) : transition R V :=
  if has is_samp cs then
    let t := sequential p (samps cs) in
    Transition (wor_cont (cont t) (emit t) (map token (samps cs)) cs)
               (fun y => if y \in det_toks cs then 0 else emit t y)
  else onehot p cs.

Lemma size_wor_cont ws m seen cs :
  size ws = size (samps cs) -> size (wor_cont ws m seen cs) = size cs.
Proof.
elim: cs ws seen => [|[x|s L] cs IH] ws seen //= h; first by rewrite IH.
by rewrite IH // size_behead h.
Qed.

Lemma det_toks_det x cs : det_toks (Det x :: cs) = x :: det_toks cs.
Proof. by []. Qed.

Lemma det_toks_samp s L cs : det_toks (Samp s L :: cs) = det_toks cs.
Proof. by []. Qed.

Lemma wor_cont_sum ws m seen cs y :
  size ws = size (samps cs) ->
  \sum_(cw <- zip cs (wor_cont ws m seen cs)) (if token cw.1 == y then cw.2 else 0) =
  \sum_(cw <- zip (samps cs) ws) (if token cw.1 == y then cw.2 else 0) +
  (if (y \in det_toks cs) && (y \notin seen) then m y else 0).
Proof.
elim: cs ws seen => [|[x|s L] cs IH] ws seen.
- by case: ws => [|w ws] _; rewrite /= !big_nil addr0.
- move=> h; rewrite /= big_cons IH // det_toks_det in_cons /=.
  case: (eqVneq x y) => [<-|xy] /=; last by rewrite add0r in_cons [y == x]eq_sym (negPf xy).
  rewrite in_cons eqxx /= addrCA; congr (_ + _); rewrite andbF addr0.
  by case: (x \in seen).
case: ws => [|w ws] //= [h]; rewrite !big_cons IH // -addrA.
by rewrite det_toks_samp.
Qed.

Lemma samps_ok_samps cs : samps_ok cs -> samps_ok (samps cs).
Proof. by elim: cs => [|[x|s L] cs IH] //= [hc /IH]. Qed.

(* given the candidates, ot-wor's output token has the law of the sequential rule on the
   sampled candidates alone: the deterministic ones only decide whether Y is continued into or
   emitted *)
Theorem ot_wor_output (p : vec) (cs : seq cand) y :
  is_law p -> samps_ok cs ->
  output_law (ot_wor p cs) cs y = output_law (sequential p (samps cs)) (samps cs) y.
Proof.
move=> hp hcs; rewrite /ot_wor; case: ifP => hs; last first.
  have -> : samps cs = [::].
    by apply/nilP; rewrite /nilp size_filter eqn0Ngt -has_count hs.
  by rewrite onehot_lossless // output_lawE big_nil addr0.
rewrite !output_lawE /= wor_cont_sum ?size_sequential //.
set e := emit (sequential p (samps cs)); set S := \sum_(_ <- _) _.
case: ifP => hd /=; last by rewrite addr0.
rewrite add0r; case: ifP => hn; first by rewrite addrC.
have {}hn : y \in map token (samps cs) by apply: negbFE.
by rewrite addr0 /e emit_sequential_mem ?add0r //; apply: samps_ok_samps.
Qed.

(* an expectation over a scheme only reads the candidate lists of positive probability *)
Lemma expect_support (sc : scheme R V) (f g : seq cand -> R) :
  wf sc -> (forall cs, samps_ok cs -> f cs = g cs) -> expect sc f = expect sc g.
Proof.
elim: sc f g => [|x k IH|L k IH] f g /=; first by move=> _ ->.
  by move=> hk h; apply: IH => // cs hcs; apply: h.
case=> [[L0 L1] hk] h; apply: eq_bigr => s _.
have [->|Ls] := eqVneq (L s) 0; first by rewrite !mul0r.
congr (_ * _); apply: IH => // cs hcs; apply: h; split=> //; split=> //.
by rewrite lt_neqAle eq_sym Ls L0.
Qed.

(* the scheme of the sampled candidates alone *)
Fixpoint strip (sc : scheme R V) : scheme R V :=
  match sc with
  | Done => Done
  | DetThen _ k => strip k
  | SampThen L k => SampThen L (fun s => strip (k s))
  end.

Lemma expect_strip (sc : scheme R V) (f : seq cand -> R) :
  expect sc (fun cs => f (samps cs)) = expect (strip sc) f.
Proof.
elim: sc f => [|x k IH|L k IH] f //=; apply: eq_bigr => s _; congr (_ * _).
exact: (IH s (fun cs => f (Samp s L :: cs))).
Qed.

Lemma wf_strip (sc : scheme R V) : wf sc -> wf (strip sc).
Proof. by elim: sc => [|x k IH|L k IH] //= [hL hk]; split=> // s; apply: IH. Qed.

(* ot-wor is lossless for every candidate scheme: deterministic and sampled candidates in any
   order, each sampled one drawn from the law it carries, which may depend on the earlier draws
   (several samples without replacement, as rheo-adaptive draws them, or i.i.d.) *)
Theorem ot_wor_lossless (sc : scheme R V) (p : vec) y :
  wf sc -> is_law p -> expect sc (fun cs => output_law (ot_wor p cs) cs y) = p y.
Proof.
move=> hsc hp.
rewrite (expect_support (g := fun cs => output_law (sequential p (samps cs)) (samps cs) y)) //.
  by rewrite (expect_strip _ (fun cs => output_law (sequential p cs) cs y))
    sequential_lossless //; apply: wf_strip.
by move=> cs hcs; apply: ot_wor_output.
Qed.

(* the adaptive RheoSampling node (docs/theory.md section 2.7): the head G, then k samples
   drawn without replacement from q *)
Corollary ot_wor_lossless_head (G : seq 'I_V) (q p : vec) k y :
  is_law q -> is_law p ->
  expect (foldr DetThen (wor q k) G) (fun cs => output_law (ot_wor p cs) cs y) = p y.
Proof.
move=> hq hp; apply: ot_wor_lossless => //.
by elim: G => [|x G IH] //=; apply: wf_wor.
Qed.

Lemma wor_cont_ge0 ws m seen cs :
  all (fun w => 0 <= w) ws -> (forall y, 0 <= m y) ->
  all (fun w => 0 <= w) (wor_cont ws m seen cs).
Proof.
move=> + hm; elim: cs ws seen => [|[x|s L] cs IH] ws seen //= hws.
  by rewrite IH // andbT; case: ifP.
by case: ws hws => [|w ws] /= => [_|/andP [-> hws]]; rewrite ?lexx IH.
Qed.

(* transitions are laws *)
Theorem ot_wor_transition (p : vec) (cs : seq cand) :
  is_law p -> samps_ok cs -> is_transition (ot_wor p cs) (size cs).
Proof.
move=> hp hcs; have hss := samps_ok_samps hcs.
have [hsz hw he htot] := sequential_transition hp hss.
have hsize : size (cont (ot_wor p cs)) = size cs.
  rewrite /ot_wor; case: ifP => _ /=; first by rewrite size_wor_cont.
  by rewrite size_sequential size_map.
have hsum : acceptance (ot_wor p cs) + total (emit (ot_wor p cs)) = 1.
  rewrite -(total_output_law hsize) total_big.
  under eq_bigr => y _ do rewrite ot_wor_output //.
  by rewrite -total_big total_output_law.
split=> //.
  rewrite /ot_wor; case: ifP => hs /=; first exact: wor_cont_ge0.
  by case: (onehot_transition cs hp).
move=> y; rewrite /ot_wor; case: ifP => hs /=; first by case: ifP.
by case: (onehot_transition cs hp).
Qed.

End OtWor.

Arguments samps {R V} _.
Arguments det_toks {R V} _.
Arguments wor_cont {R V} _ _ _ _.
Arguments ot_wor {R V} _ _.
Arguments strip {R V} _.
