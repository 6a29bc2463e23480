(* The sequential rule (rheotheory.verify.rules.sequential) and EAGLE's one-hot rule
   (rules.onehot) as transition laws, and their losslessness for every vocabulary.

   A candidate is deterministic (Python: Candidate(token), law None) or sampled from the
   law it was actually drawn from (Candidate(token, law)). A transition is the list of
   continue-into-candidate weights and the emit weights (rules.Transition). *)
From mathcomp Require Import all_ssreflect ssralg ssrnum.
From Rheo Require Import Laws.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import Order.TTheory GRing.Theory Num.Theory.
Local Open Scope ring_scope.

Section Sequential.

Variable R : realFieldType.
Variable V : nat.

Notation vec := ('I_V -> R).

(* rules.Candidate *)
Inductive cand := Det of 'I_V | Samp of 'I_V & vec.

Definition token (c : cand) : 'I_V := match c with Det x => x | Samp x _ => x end.

(* rules.Transition: cont[i] continues into candidate i, emit[y] emits y and stops *)
Record transition := Transition { cont : seq R; emit : vec }.

(* rules.acceptance *)
Definition acceptance (t : transition) : R := sum_seq id (cont t).

Lemma acceptanceE t : acceptance t = \sum_(w <- cont t) w.
Proof. exact: sum_seqE. Qed.

(* rules.output_law: the law of the node's output token for fixed candidates *)
Definition output_law (t : transition) (cs : seq cand) (y : 'I_V) : R :=
  emit t y + sum_seq (fun cw => if token cw.1 == y then cw.2 else 0) (zip cs (cont t)).

Lemma output_lawE t cs y :
  output_law t cs y =
  emit t y + \sum_(cw <- zip cs (cont t)) (if token cw.1 == y then cw.2 else 0).
Proof. by rewrite /output_law sum_seqE. Qed.

(* the acceptance probability of one candidate against the current target
   (rules._min1 for a sampled candidate, the current p(x) for a deterministic one) *)
Definition accept (p : vec) (c : cand) : R :=
  match c with Det x => p x | Samp x L => Num.min 1 (p x / L x) end.

(* the target after the candidate was rejected: p with x zeroed and renormalised, or the
   residual norm((p - L)+) (laws.residual) *)
Definition next_target (p : vec) (c : cand) : vec :=
  match c with Det x => normalise (zero_at p x) | Samp _ L => residual p L end.

(* rules.sequential, written as a recursion on the candidate list: the Python loop's
   running product `rest` is the product of the (1 - a) factors taken here *)
Fixpoint sequential (p : vec) (cs : seq cand) : transition :=
  match cs with
  | [::] => Transition [::] p
  | c :: cs' =>
      let a := accept p c in
      let t := sequential (next_target p c) cs' in
      Transition (a :: map ( *%R (1 - a)) (cont t)) (fun y => (1 - a) * emit t y)
  end.

(* rules.onehot: every candidate checked one-hot, whatever its drafting law *)
Definition onehot (p : vec) (cs : seq cand) : transition :=
  sequential p (map (fun c => Det (token c)) cs).

Lemma sum_zip_scale (cs : seq cand) (ws : seq R) (k : R) (y : 'I_V) :
  \sum_(cw <- zip cs (map ( *%R k) ws)) (if token cw.1 == y then cw.2 else 0) =
  k * \sum_(cw <- zip cs ws) (if token cw.1 == y then cw.2 else 0).
Proof.
elim: cs ws => [|c cs IH] [|w ws] /=; rewrite ?big_nil ?mulr0 //.
rewrite !big_cons IH mulrDr; congr (_ + _).
by case: (token c == y); rewrite ?mulr0.
Qed.

Lemma output_sequential_cons p c cs y :
  output_law (sequential p (c :: cs)) (c :: cs) y =
  accept p c * (token c == y)%:R +
  (1 - accept p c) * output_law (sequential (next_target p c) cs) cs y.
Proof.
rewrite !output_lawE /= big_cons /= sum_zip_scale mulrDr.
case: (token c == y); rewrite ?mulr1 ?mulr0 ?add0r; last by [].
by rewrite addrCA.
Qed.

(* A candidate scheme: how the candidates of a node are drawn, in creation order. A
   deterministic candidate, or one drawn from a law L, after which the rest of the scheme
   may depend on the drawn token (draws without replacement, RheoSampling's fillers). *)
Inductive scheme :=
  | Done
  | DetThen of 'I_V & scheme
  | SampThen of vec & ('I_V -> scheme).

(* every sampling law of the scheme is a law *)
Fixpoint wf (sc : scheme) : Prop :=
  match sc with
  | Done => True
  | DetThen _ k => wf k
  | SampThen L k => is_law L /\ forall s, wf (k s)
  end.

(* the expectation of f over the candidate lists the scheme draws; a sampled candidate
   carries the law it was drawn from *)
Fixpoint expect (sc : scheme) (f : seq cand -> R) : R :=
  match sc with
  | Done => f [::]
  | DetThen x k => expect k (fun cs => f (Det x :: cs))
  | SampThen L k => \sum_(s < V) L s * expect (k s) (fun cs => f (Samp s L :: cs))
  end.

Lemma expect_DetThen x k f : expect (DetThen x k) f = expect k (fun cs => f (Det x :: cs)).
Proof. by []. Qed.

Lemma expect_SampThen L k f :
  expect (SampThen L k) f = \sum_(s < V) L s * expect (k s) (fun cs => f (Samp s L :: cs)).
Proof. by []. Qed.

Lemma eq_expect sc (f g : seq cand -> R) :
  (forall cs, f cs = g cs) -> expect sc f = expect sc g.
Proof.
elim: sc f g => [|x k IH|L k IH] f g h //=; first exact: IH.
by apply: eq_bigr => s _; congr (_ * _); apply: IH.
Qed.

Lemma expect_affine sc (a b : R) (f : seq cand -> R) :
  wf sc -> expect sc (fun cs => a + b * f cs) = a + b * expect sc f.
Proof.
elim: sc a b f => [|x k IH|L k IH] a b f //= => [/IH //|[[L0 L1] hk]].
transitivity (\sum_(s < V) (a * L s + b * (L s * expect (k s) (fun cs => f (Samp s L :: cs))))).
  apply: eq_bigr => s _; rewrite (IH s a b (fun cs => f (Samp s L :: cs)) (hk s)).
  by rewrite mulrDr mulrCA [L s * a]mulrC.
by rewrite big_split /= -mulr_sumr -mulr_sumr -total_big L1 mulr1.
Qed.

(* The single-draft lemma: one candidate s ~ L, verified with min(1, p(s)/L(s)) and the
   residual, outputs p: min(p, L) + (1 - overlap p L) norm((p - L)+) = p. *)
Lemma accepted_mass (p L : vec) (s : 'I_V) :
  0 <= L s -> 0 <= p s -> L s * accept p (Samp s L) = Num.min (p s) (L s).
Proof.
move=> Ls0 ps0; have [Ly0|Lypos] := eqVneq (L s) 0.
  rewrite Ly0 mul0r; apply/esym/eqP; rewrite eq_le; apply/andP; split.
    by rewrite le_minl lexx orbT.
  by rewrite le_minr ps0 lexx.
have Lygt : 0 < L s by rewrite lt_neqAle eq_sym Lypos Ls0.
rewrite /accept mulrC; case: (lerP 1 (p s / L s)) => h.
  rewrite mul1r; move: h; rewrite ler_pdivl_mulr // mul1r => h.
  by apply/esym/min_idPr.
rewrite divfK //; move: h; rewrite ltr_pdivr_mulr // mul1r => h.
by apply/esym/min_idPl/ltW.
Qed.

Lemma single_draft_mass (p L : vec) (y : 'I_V) :
  (forall x, 0 <= L x) -> 0 <= p y ->
  \sum_(s < V) L s * (accept p (Samp s L) * (s == y)%:R) = Num.min (p y) (L y).
Proof.
move=> L0 py0.
rewrite (bigD1 y) //= eqxx mulr1 big1 ?addr0 => [|s /negPf ->]; last by rewrite !mulr0.
exact: accepted_mass.
Qed.

Lemma rejected_mass (p L : vec) :
  is_law p -> is_law L ->
  \sum_(s < V) L s * (1 - accept p (Samp s L)) = 1 - overlap p L.
Proof.
move=> [p0 p1] [L0 L1].
transitivity (\sum_(s < V) (L s - Num.min (p s) (L s))).
  apply: eq_bigr => s _; rewrite mulrBr mulr1.
  by have := single_draft_mass (y:=s) L0 (p0 s); rewrite (bigD1 s) //= eqxx mulr1 big1 ?addr0
    => [->|i /negPf ->]; rewrite ?mulr0.
by rewrite sumrB -(total_big L) L1 /overlap total_big.
Qed.

Theorem sequential_lossless (sc : scheme) :
  wf sc -> forall p, is_law p -> forall y,
  expect sc (fun cs => output_law (sequential p cs) cs y) = p y.
Proof.
elim: sc => [|x k IH|L k IH].
- by move=> _ p _ y; rewrite /= output_lawE big_nil addr0.
- move=> hk p [p0 p1] y; rewrite expect_DetThen.
  have {}hk : wf k by [].
  transitivity (expect k (fun cs => p x * (x == y)%:R +
      (1 - p x) * output_law (sequential (normalise (zero_at p x)) cs) cs y)).
    by apply: eq_expect => cs; apply: output_sequential_cons.
  rewrite expect_affine //.
  have [px1|px1] := eqVneq (p x) 1.
    rewrite px1 subrr mul0r addr0 mul1r.
    have hz : forall z, z != x -> p z = 0.
      move=> z zx; have : total p - p x = 0 by rewrite p1 px1 subrr.
      rewrite total_big (bigD1 x) //= addrC addKr => /eqP; rewrite psumr_eq0 => [|i _]; last exact: p0.
      by move=> /allP /(_ z (mem_index_enum _)); rewrite zx implyTb => /eqP.
    by case: eqP => [<-//|/eqP yx]; rewrite hz // eq_sym.
  have hn : total (zero_at p x) != 0 by rewrite total_zero_at p1 subr_eq0 eq_sym.
  rewrite IH //; last by apply: normalise_law => //; apply: zero_at_ge0.
  have -> : 1 - p x = total (zero_at p x) by rewrite total_zero_at p1.
  rewrite scale_normalise // /zero_at.
  by case: eqP => [->|/eqP xy]; rewrite ?eqxx ?mulr1 ?addr0 // mulr0 add0r eq_sym (negPf xy).
- move=> hLk p hp y; rewrite expect_SampThen.
  have {hLk} [hL hk] : is_law L /\ forall s, wf (k s) by [].
  transitivity (\sum_(s < V) L s * (accept p (Samp s L) * (s == y)%:R +
      (1 - accept p (Samp s L)) * expect (k s) (fun cs => output_law (sequential (residual p L) cs) cs y))).
    apply: eq_bigr => s _; congr (_ * _); rewrite -expect_affine //.
    by apply: eq_expect => cs; apply: output_sequential_cons.
  have [hz|hn] := eqVneq (total (pos (fun x => p x - L x))) 0.
    have eqL := pos_total0_eq hp hL hz.
    transitivity (\sum_(s < V) L s * (accept p (Samp s L) * (s == y)%:R)).
      apply: eq_bigr => s _; have [Ls0|Lsn] := eqVneq (L s) 0; first by rewrite Ls0 !mul0r.
      rewrite /accept eqL divff // minxx subrr mul0r addr0 //.
    rewrite single_draft_mass //; [|by case: hL|by case: hp].
    by rewrite eqL minxx.
  have hr := residual_law hn.
  under eq_bigr => s _ do rewrite IH // mulrDr [X in _ + X]mulrA.
  rewrite big_split /= -mulr_suml rejected_mass // single_draft_mass; [|by case: hL|by case: hp].
  rewrite -(total_pos_residual L (proj2 hp)) scale_normalise //.
  by rewrite /pos min_add_pos.
Qed.

(* onehot is lossless for every fixed candidate list *)
Fixpoint dets (G : seq 'I_V) : scheme :=
  if G is x :: G' then DetThen x (dets G') else Done.

Lemma expect_dets G f : expect (dets G) f = f (map Det G).
Proof. by elim: G f => [|x G IH] f //=; rewrite IH. Qed.

Lemma output_law_tokens t cs cs' y :
  map token cs = map token cs' -> output_law t cs y = output_law t cs' y.
Proof.
rewrite !output_lawE => h; congr (_ + _).
elim: cs cs' (cont t) h => [|c cs IH] [|c' cs'] [|w ws] //= [hc hcs].
by rewrite !big_cons hc (IH cs').
Qed.

Theorem onehot_lossless (p : vec) (cs : seq cand) y :
  is_law p -> output_law (onehot p cs) cs y = p y.
Proof.
move=> hp; rewrite (@output_law_tokens _ _ (map (fun c => Det (token c)) cs)); last first.
  by elim: cs => //= c cs ->.
have := sequential_lossless (sc:=dets (map token cs)) _ hp y.
rewrite expect_dets /onehot -map_comp => -> //.
by elim: (map token cs).
Qed.

(* one draft s ~ L under the sequential rule (speculative sampling) *)
Theorem single_draft_lossless (p L : vec) y :
  is_law p -> is_law L ->
  \sum_(s < V) L s * output_law (sequential p [:: Samp s L]) [:: Samp s L] y = p y.
Proof.
move=> hp hL; have := sequential_lossless (sc:=SampThen L (fun _ => Done)) _ hp y.
by apply; split.
Qed.

Theorem single_draft_acceptance (p L : vec) :
  is_law p -> is_law L ->
  \sum_(s < V) L s * acceptance (sequential p [:: Samp s L]) = overlap p L.
Proof.
move=> [p0 _] [L0 _]; rewrite /overlap total_big; apply: eq_bigr => s _.
by rewrite acceptanceE /= big_cons big_nil addr0 accepted_mass.
Qed.

(* RRS (SpecInfer): k drafts drawn i.i.d. from q *)
Fixpoint iid (q : vec) (k : nat) : scheme :=
  if k is k'.+1 then SampThen q (fun _ => iid q k') else Done.

Corollary rrs_lossless (q p : vec) k y :
  is_law q -> is_law p ->
  expect (iid q k) (fun cs => output_law (sequential p cs) cs y) = p y.
Proof.
move=> hq hp; apply: sequential_lossless => //.
by elim: k => //= k IH; split.
Qed.

(* RRS without replacement (RSD, Sequoia): each draft from q restricted to the earlier
   drafts; the drafting stops when no mass is left *)
Fixpoint wor (q : vec) (k : nat) : scheme :=
  if k is k'.+1 then
    SampThen q (fun s => if total (restrict q [:: s]) == 0 then Done else wor (restrict q [:: s]) k')
  else Done.

Lemma wf_wor (q : vec) k : is_law q -> wf (wor q k).
Proof.
elim: k q => //= k IH q hq; split=> // s.
case: eqP => // /eqP hn; apply: IH; apply: normalise_law => [x|].
  by case: (x \in [:: s]); last by case: hq.
by apply: contraNneq hn; rewrite /restrict total_normalise => ->; rewrite mul0r.
Qed.

Corollary rrs_wor_lossless (q p : vec) k y :
  is_law q -> is_law p ->
  expect (wor q k) (fun cs => output_law (sequential p cs) cs y) = p y.
Proof. by move=> hq hp; apply: sequential_lossless => //; apply: wf_wor. Qed.

(* Transitions are laws (rules.Transition: cont and emit nonnegative, summing to 1). A sampled
   candidate must carry a law that is positive at its own token (rules raise VerifierError
   otherwise); a sub-law (nonnegative, mass at most 1) covers the targets the rules pass on. *)
Definition is_transition (t : transition) (n : nat) : Prop :=
  [/\ size (cont t) = n, all (fun w => 0 <= w) (cont t), (forall y, 0 <= emit t y) &
      acceptance t + total (emit t) = 1].

Definition samp_ok (c : cand) : Prop := if c is Samp s L then is_law L /\ 0 < L s else True.

Fixpoint samps_ok (cs : seq cand) : Prop :=
  if cs is c :: cs' then samp_ok c /\ samps_ok cs' else True.

Definition subl (p : vec) : Prop := (forall x, 0 <= p x) /\ total p <= 1.

Lemma law_subl p : is_law p -> subl p.
Proof. by case=> h0 h1; split; rewrite ?h1. Qed.

Lemma subl_le1 p x : subl p -> p x <= 1.
Proof.
case=> h0 h1; apply: le_trans h1; rewrite total_big (bigD1 x) //= ler_addl.
by apply: sumr_ge0 => i _.
Qed.

Lemma normalise_subl (a : vec) : (forall x, 0 <= a x) -> subl (normalise a).
Proof.
move=> h0; split=> [x|]; first by rewrite /normalise divr_ge0 // total_ge0.
rewrite total_normalise; have [->|hn] := eqVneq (total a) 0; first by rewrite mul0r ler01.
by rewrite divff.
Qed.

Lemma accept_ge0 p c : subl p -> samp_ok c -> 0 <= accept p c.
Proof.
case: c => [x|s L] [p0 _] /=; first by [].
by case=> [[L0 _] _]; rewrite le_minr ler01 divr_ge0.
Qed.

Lemma accept_le1 p c : subl p -> accept p c <= 1.
Proof. by case: c => [x|s L] h /=; [exact: subl_le1|rewrite le_minl lexx]. Qed.

Lemma next_target_subl p c : subl p -> samp_ok c -> subl (next_target p c).
Proof.
case: c => [x|s L] [p0 _] _ /=; apply: normalise_subl; last exact: pos_ge0.
exact: zero_at_ge0.
Qed.

Lemma sequential_ge0 p cs :
  subl p -> samps_ok cs ->
  all (fun w => 0 <= w) (cont (sequential p cs)) /\ forall y, 0 <= emit (sequential p cs) y.
Proof.
elim: cs p => [|c cs IH] p hp /=; first by case: hp.
move=> [hc hcs]; have ha0 := accept_ge0 hp hc; have ha1 := accept_le1 c hp.
have [hw he] := IH _ (next_target_subl hp hc) hcs.
have h1a : 0 <= 1 - accept p c by rewrite subr_ge0.
split=> [|y]; last exact: mulr_ge0.
rewrite ha0 /= all_map; apply/allP => w hw' /=.
by apply: mulr_ge0 => //; move/allP: hw; apply.
Qed.

Lemma total_scale (k : R) (a : vec) : total (fun y => k * a y) = k * total a.
Proof. by rewrite !total_big mulr_sumr. Qed.

Lemma sum_seq_scale (k : R) (ws : seq R) : sum_seq id (map ( *%R k) ws) = k * sum_seq id ws.
Proof. by rewrite !sum_seqE big_map mulr_sumr. Qed.

(* after a candidate is rejected, the next target is a law, unless the rejection has
   probability 0 *)
Lemma next_target_law p c :
  is_law p -> samp_ok c -> accept p c != 1 -> is_law (next_target p c).
Proof.
case: c => [x|s L] /= hp.
  move=> _ hx; have [p0 p1] := hp; apply: normalise_law; first exact: zero_at_ge0.
  by rewrite total_zero_at p1 subr_eq0 eq_sym.
move=> [hL Ls] ha; apply: residual_law; apply: contra ha => /eqP hz.
have eqL := pos_total0_eq hp hL hz.
by rewrite eqL divff ?minxx // gt_eqF.
Qed.

Lemma sequential_total p cs :
  is_law p -> samps_ok cs -> acceptance (sequential p cs) + total (emit (sequential p cs)) = 1.
Proof.
elim: cs p => [|c cs IH] p hp /=; first by case: hp => _ h1; rewrite /acceptance /= add0r.
move=> [hc hcs]; rewrite /acceptance /= sum_seq_scale total_scale -addrA -mulrDr.
have [ha|ha] := eqVneq (accept p c) 1; first by rewrite ha subrr mul0r addr0.
rewrite -/(acceptance _) IH //; last exact: next_target_law.
by rewrite mulr1 addrC subrK.
Qed.

Theorem sequential_transition p cs :
  is_law p -> samps_ok cs -> is_transition (sequential p cs) (size cs).
Proof.
move=> hp hcs; have [h0 h1] := sequential_ge0 (law_subl hp) hcs.
split=> //; last exact: sequential_total.
by elim: cs p {hp hcs h0 h1} => //= c cs IH p; rewrite size_map IH.
Qed.

Lemma samps_ok_dets cs : samps_ok (map (fun c => Det (token c)) cs).
Proof. by elim: cs. Qed.

Theorem onehot_transition p cs : is_law p -> is_transition (onehot p cs) (size cs).
Proof.
move=> hp; have := sequential_transition hp (samps_ok_dets cs).
by rewrite size_map.
Qed.

(* sequential never emits a token it has zeroed: once a target gives y no mass, no later
   target does *)
Lemma emit_sequential_zero p cs y :
  samps_ok cs -> p y = 0 -> emit (sequential p cs) y = 0.
Proof.
elim: cs p => [|c cs IH] p //= [hc hcs] py; rewrite IH ?mulr0 //.
case: c hc => [x|s L] /= hc; rewrite /normalise.
  by rewrite /zero_at; case: (y == x); rewrite ?mul0r // py mul0r.
rewrite /residual /normalise /pos py sub0r; case: hc => [[L0 _] _].
have -> : Num.max (- L y) 0 = 0 by apply/max_idPr; rewrite oppr_le0.
by rewrite mul0r.
Qed.

(* so a candidate's token is never emitted: the output token holding it is its candidate *)
Lemma emit_sequential_mem p cs y :
  samps_ok cs -> y \in map token cs -> emit (sequential p cs) y = 0.
Proof.
elim: cs p => [|c cs IH] p //= [hc hcs]; rewrite in_cons => /orP [/eqP ->|hy]; last first.
  by rewrite IH ?mulr0.
case: c hc => [x|s L] /= hc.
  by rewrite emit_sequential_zero ?mulr0 // /normalise /zero_at eqxx mul0r.
case: (lerP (L s) (p s)) => h.
  have [[L0 _] Ls] := hc.
  have -> : Num.min 1 (p s / L s) = 1.
    by apply/min_idPl; rewrite ler_pdivl_mulr // mul1r.
  by rewrite subrr mul0r.
rewrite emit_sequential_zero ?mulr0 // /residual /normalise /pos.
have -> : Num.max (p s - L s) 0 = 0 by apply/max_idPr; rewrite subr_le0 ltW.
by rewrite mul0r.
Qed.

End Sequential.

Arguments Det {R V} _.
Arguments Samp {R V} _ _.
Arguments token {R V} _.
Arguments Transition {R V} _ _.
Arguments cont {R V} _.
Arguments emit {R V} _ _.
Arguments acceptance {R V} _.
Arguments output_law {R V} _ _ _.
Arguments accept {R V} _ _.
Arguments next_target {R V} _ _ _.
Arguments sequential {R V} _ _.
Arguments onehot {R V} _ _.
Arguments Done {R V}.
Arguments DetThen {R V} _ _.
Arguments SampThen {R V} _ _.
Arguments wf {R V} _.
Arguments expect {R V} _ _.
Arguments dets {R V} _.
Arguments iid {R V} _ _.
Arguments wor {R V} _ _.
Arguments is_transition {R V} _ _.
Arguments samp_ok {R V} _.
Arguments samps_ok {R V} _.
Arguments subl {R V} _.
