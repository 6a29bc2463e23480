(* The tree step (docs/theory.md sections 1.3 and 4): a walk whose every node's verifier
   is lossless, given the law the node's candidates were drawn from, emits tokens whose
   extended output law is the target's. Mirrors what rheotheory.exact.lossless_check
   certifies on instances, for every vocabulary, depth and tree.

   A node is given by the law of its candidate list given everything the walk has seen
   (as an expectation operator, so a candidate scheme, a finite mixture, or any other
   law of candidate lists fits), its verifier, and the walk below its i-th candidate
   given the drawn candidates (the subtree may depend on every draw at the node: the
   global prune, fillers). A node without candidates or a Bonus leaf emits the bonus
   token y ~ p. *)
From mathcomp Require Import all_ssreflect ssralg ssrnum.
From Rheo Require Import Laws Sequential Ot OtWor.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import Order.TTheory GRing.Theory Num.Theory.
Local Open Scope ring_scope.

Section Tree.

Variable R : realFieldType.
Variable V : nat.

Notation vec := ('I_V -> R).
Notation cand := (cand R V).

(* the target law after each prefix, p(. | u) *)
Variable target : seq 'I_V -> vec.

(* z continued by fresh target samples after u: p(z | u) *)
Fixpoint fresh (u z : seq 'I_V) : R :=
  if z is y :: z' then target u y * fresh (rcons u y) z' else 1.

(* the expectation operator of a law of candidate lists *)
Definition candlaw := (seq cand -> R) -> R.

Inductive walk :=
  | Bonus
  | Node of candlaw & (vec -> seq cand -> transition R V) & (seq cand -> nat -> walk).

(* the token of the i-th candidate *)
Fixpoint tok_at (cs : seq cand) (i : nat) : option 'I_V :=
  match cs, i with
  | c :: _, 0 => Some (token c)
  | _ :: cs', i'.+1 => tok_at cs' i'
  | [::], _ => None
  end.

(* sum over the candidates holding y of (continue weight) * g(index) *)
Fixpoint cont_into (g : nat -> R) (y : 'I_V) (cs : seq cand) (ws : seq R) : R :=
  match cs, ws with
  | c :: cs', w :: ws' =>
      (if token c == y then w * g 0%N else 0) + cont_into (fun i => g i.+1) y cs' ws'
  | _, _ => 0
  end.

(* the extended output law of section 4: the law of the step's output Z, completed to
   any length by fresh target samples, evaluated at z after the prefix u *)
Fixpoint ext (w : walk) (u z : seq 'I_V) : R :=
  match z with
  | [::] => 1
  | y :: z' =>
      match w with
      | Bonus => target u y * fresh (rcons u y) z'
      | Node E ver child =>
          E (fun cs =>
               emit (ver (target u) cs) y * fresh (rcons u y) z' +
               cont_into (fun i => ext (child cs i) (rcons u y) z') y cs (cont (ver (target u) cs)))
      end
  end.

(* the node's verifier is lossless given its candidates' law, and that law is an
   expectation (extensional and linear in a constant factor) *)
Definition node_ok (E : candlaw) (ver : vec -> seq cand -> transition R V) (u : seq 'I_V) :=
  [/\ forall f g, (forall cs, f cs = g cs) -> E f = E g,
      forall f c, E (fun cs => f cs * c) = E f * c &
      forall y, E (fun cs => output_law (ver (target u) cs) cs y) = target u y].

Fixpoint walk_ok (w : walk) (u : seq 'I_V) : Prop :=
  match w with
  | Bonus => True
  | Node E ver child =>
      node_ok E ver u /\ forall cs i x, tok_at cs i = Some x -> walk_ok (child cs i) (rcons u x)
  end.

Lemma cont_into_const F (g : nat -> R) y cs ws :
  (forall i, tok_at cs i = Some y -> g i = F) ->
  cont_into g y cs ws = F * \sum_(cw <- zip cs ws) (if token cw.1 == y then cw.2 else 0).
Proof.
elim: cs ws g => [|c cs IH] [|w ws] g hg /=; rewrite ?big_nil ?mulr0 //.
rewrite big_cons /= (IH ws (fun i => g i.+1)) => [|i hi]; last exact: (hg i.+1 hi).
rewrite mulrDr; congr (_ + _).
case: eqP => [hy|]; last by rewrite mulr0.
by rewrite (hg 0%N) /= ?hy // mulrC.
Qed.

Theorem tree_step_lossless (w : walk) (u : seq 'I_V) :
  walk_ok w u -> forall z, ext w u z = fresh u z.
Proof.
move=> hw z; elim: z w u hw => [|y z IH] [|E ver child] u //=.
move=> [[Eext Escale Eloss] hchild].
rewrite -Eloss -Escale; apply: Eext => cs.
rewrite (@cont_into_const (fresh (rcons u y) z)).
  by rewrite output_lawE mulrDl [fresh _ _ * _]mulrC.
by move=> i hi; apply: IH; apply: hchild hi.
Qed.

(* a candidate scheme (Sequential.v) is such a law *)
Lemma expect_scale (sc : scheme R V) f c : expect sc (fun cs => f cs * c) = expect sc f * c.
Proof.
elim: sc f => [|x k IH|L k IH] f //.
  by rewrite !expect_DetThen (IH (fun cs => f (Det x :: cs))).
rewrite !expect_SampThen mulr_suml; apply: eq_bigr => s _.
by rewrite (IH s (fun cs => f (Samp s L :: cs))) mulrA.
Qed.

Lemma expect_const (sc : scheme R V) c : wf sc -> expect sc (fun _ => c) = c.
Proof.
elim: sc => [|x k IH|L k IH] //= [[L0 L1] hk].
under eq_bigr => s _ do rewrite IH //.
by rewrite -mulr_suml -total_big L1 mul1r.
Qed.

Lemma node_ok_sequential (sc : scheme R V) u :
  is_law (target u) -> wf sc -> node_ok (expect sc) sequential u.
Proof.
move=> hp h; split; [exact: eq_expect|exact: expect_scale|].
by move=> y; apply: sequential_lossless.
Qed.

Lemma node_ok_ot (sc : scheme R V) u :
  is_law (target u) -> one_samp sc -> node_ok (expect sc) ot u.
Proof.
move=> hp h; split; [exact: eq_expect|exact: expect_scale|].
by move=> y; apply: ot_lossless.
Qed.

Lemma node_ok_onehot (sc : scheme R V) u :
  is_law (target u) -> wf sc -> node_ok (expect sc) onehot u.
Proof.
move=> hp h; split; [exact: eq_expect|exact: expect_scale|] => y.
transitivity (expect sc (fun _ => target u y)).
  by apply: eq_expect => cs; rewrite onehot_lossless.
exact: expect_const.
Qed.

(* node_ok is closed under mixtures: a node whose candidate list is drawn from one of several
   laws, under each of which the verifier is lossless (RheoSampling's sampled slot kept with
   C1, or pruned, or empty), is a lossless node *)
Theorem node_ok_mix (I : finType) (lam : I -> R) (Es : I -> candlaw) ver u :
  \sum_(i : I) lam i = 1 -> (forall i, node_ok (Es i) ver u) ->
  node_ok (fun f => \sum_(i : I) lam i * Es i f) ver u.
Proof.
move=> h1 h; split.
- move=> f g hfg; apply: eq_bigr => i _; congr (_ * _).
  by case: (h i) => he _ _; apply: he.
- move=> f c; rewrite mulr_suml; apply: eq_bigr => i _.
  by case: (h i) => _ hs _; rewrite hs mulrA.
move=> y; transitivity (\sum_(i : I) lam i * target u y).
  by apply: eq_bigr => i _; case: (h i) => _ _ ->.
by rewrite -mulr_suml h1 mul1r.
Qed.

Theorem node_ok_mix2 (a : R) (E1 E2 : candlaw) ver u :
  node_ok E1 ver u -> node_ok E2 ver u ->
  node_ok (fun f => a * E1 f + (1 - a) * E2 f) ver u.
Proof.
move=> [e1 s1 l1] [e2 s2 l2]; split=> [f g h|f c|y] /=.
- by rewrite (e1 _ _ h) (e2 _ _ h).
- by rewrite s1 s2 !mulrA -mulrDl.
by rewrite l1 l2 -mulrDl addrC subrK mul1r.
Qed.

(* a node whose sampled slot is pruned or empty: its candidates are deterministic, and ot is
   onehot there *)
Lemma node_ok_ot_dets (sc : scheme R V) u :
  is_law (target u) -> no_samp sc -> node_ok (expect sc) ot u.
Proof.
move=> hp h; split; [exact: eq_expect|exact: expect_scale|] => y.
rewrite expect_no_samp // /ot; set cs := map Det _.
have -> : samp_of cs = None by rewrite /cs; elim: (det_tokens sc).
by rewrite onehot_lossless.
Qed.

Lemma node_ok_ot_wor (sc : scheme R V) u :
  is_law (target u) -> wf sc -> node_ok (expect sc) ot_wor u.
Proof.
move=> hp h; split; [exact: eq_expect|exact: expect_scale|] => y.
exact: ot_wor_lossless.
Qed.

(* The law of the step's output Z itself (not extended): zlaw w u z = P(Z = z), and
   reach w u z = P(the walk accepts every token of z and goes on). For a walk on a given tree
   (each node's candidate list fixed: a point mass), the extended output law is the left side of
   the criterion of docs/theory.md section 4 computed from them (ext_zlaw). The comparison with
   the code (compare.py) checks both against PerNodeWalk: a walk that drops the bonus token
   leaves the extended law unchanged (the bonus token is a fresh target sample) but not Z's. *)
Fixpoint zlaw (w : walk) (u z : seq 'I_V) {struct z} : R :=
  match z with
  | [::] => 0
  | y :: z' =>
      match w with
      | Bonus => if z' is [::] then target u y else 0
      | Node E ver child =>
          E (fun cs =>
               (if z' is [::] then emit (ver (target u) cs) y else 0) +
               cont_into (fun i => zlaw (child cs i) (rcons u y) z') y cs (cont (ver (target u) cs)))
      end
  end.

Fixpoint reach (w : walk) (u z : seq 'I_V) {struct z} : R :=
  match z with
  | [::] => 1
  | y :: z' =>
      match w with
      | Bonus => 0
      | Node E ver child =>
          E (fun cs => cont_into (fun i => reach (child cs i) (rcons u y) z') y cs
                                 (cont (ver (target u) cs)))
      end
  end.

(* a walk on a given tree *)
Fixpoint on_tree (w : walk) : Prop :=
  match w with
  | Bonus => True
  | Node E _ child => exists cs0, (forall f, E f = f cs0) /\ forall i, on_tree (child cs0 i)
  end.

Lemma cont_into_ext (g1 g2 : nat -> R) y cs ws :
  (forall i, g1 i = g2 i) -> cont_into g1 y cs ws = cont_into g2 y cs ws.
Proof.
elim: cs ws g1 g2 => [|c cs IH] [|w ws] g1 g2 h //=.
by rewrite h (IH _ _ (fun i => g2 i.+1)).
Qed.

Lemma cont_into_add (g1 g2 : nat -> R) y cs ws :
  cont_into (fun i => g1 i + g2 i) y cs ws = cont_into g1 y cs ws + cont_into g2 y cs ws.
Proof.
elim: cs ws g1 g2 => [|c cs IH] [|w ws] g1 g2 /=; rewrite ?addr0 //.
rewrite (IH _ (fun i => g1 i.+1) (fun i => g2 i.+1)) addrACA; congr (_ + _).
by case: (token c == y); rewrite ?mulrDr ?addr0.
Qed.

Lemma cont_into_scale (g : nat -> R) (k : R) y cs ws :
  cont_into (fun i => g i * k) y cs ws = cont_into g y cs ws * k.
Proof.
elim: cs ws g => [|c cs IH] [|w ws] g /=; rewrite ?mul0r //.
rewrite (IH _ (fun i => g i.+1)) mulrDl; congr (_ + _).
by case: (token c == y); rewrite ?mulrA ?mul0r.
Qed.

Lemma cont_into_sum n (G : nat -> nat -> R) y cs ws :
  cont_into (fun i => \sum_(k < n) G k i) y cs ws = \sum_(k < n) cont_into (G k) y cs ws.
Proof.
elim: n => [|n IH]; last first.
  rewrite [RHS]big_ord_recr /= -IH -cont_into_add; apply: cont_into_ext => i.
  by rewrite big_ord_recr.
rewrite big_ord0 (@cont_into_ext _ (fun _ => 0 * 0)) => [|i]; last by rewrite big_ord0 mul0r.
by rewrite cont_into_scale mulr0.
Qed.

Theorem ext_zlaw (w : walk) u z :
  on_tree w ->
  ext w u z = \sum_(k < size z) zlaw w u (take k.+1 z) * fresh (u ++ take k.+1 z) (drop k.+1 z)
              + reach w u z.
Proof.
elim: z w u => [|y z IH] w u; first by case: w => [|E ver child] _; rewrite big_ord0 add0r.
case: w => [|E ver child] /=.
  move=> _; rewrite big_ord_recl /= take0 drop0 cats1 addr0 big1 ?addr0 // => k _.
  by case: (take k.+1 z) (size_takel (ltn_ord k)) => // *; rewrite mul0r.
move=> [cs0 [hE hch]]; rewrite hE big_ord_recl /= take0 drop0 cats1 hE.
under eq_bigr do rewrite hE.
set ws := cont (ver (target u) cs0).
rewrite (cont_into_ext _ _ _ (g2 := fun i =>
   \sum_(k < size z) zlaw (child cs0 i) (rcons u y) (take k.+1 z) *
                     fresh (rcons u y ++ take k.+1 z) (drop k.+1 z) +
   reach (child cs0 i) (rcons u y) z)); last by move=> i; apply: IH.
rewrite cont_into_add (@cont_into_sum (size z) (fun k i =>
   zlaw (child cs0 i) (rcons u y) (take k.+1 z) * fresh (rcons u y ++ take k.+1 z) (drop k.+1 z))).
rewrite addrA hE; congr (_ + _).
rewrite (@cont_into_ext (fun i => zlaw (child cs0 i) (rcons u y) [::]) (fun _ => 0 * 0));
  last by move=> i; rewrite mul0r.
rewrite cont_into_scale mulr0 addr0; congr (_ + _); apply: eq_bigr => k _ /=.
case: (take k.+1 z) (size_takel (ltn_ord k)) => // x t _.
by rewrite add0r -cont_into_scale cat_rcons /bump leq0n add1n.
Qed.

End Tree.
