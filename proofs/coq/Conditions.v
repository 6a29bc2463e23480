(* RheoSampling's conditions C1 and C2 at a node (docs/theory.md section 8) and their
   sufficiency: wherever C1 holds ot is lossless, wherever C2 holds sequential is. With
   the computed counterexamples: C1 without C2 breaks sequential (ot stays lossless),
   and a size-biased sampled child (the `true` proxy's mechanism) breaks ot.

   At a node v, given the history H_v the walk has seen, the node's candidates are the
   head A_j (deterministic, verified before the sampled slot), the sampled slot s (the
   verifier is told s ~ L, the member law L_v) and fillers F j s after it (they may
   depend on s); (j, s) has joint law w. j ranges over a finite type of views. *)
From mathcomp Require Import all_ssreflect ssralg ssrnum ssrint rat.
From Rheo Require Import Laws Sequential Ot Tree.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import Order.TTheory GRing.Theory Num.Theory.
Local Open Scope ring_scope.

Section Conditions.

Variable R : realFieldType.
Variable V : nat.

Notation vec := ('I_V -> R).
Notation cand := (cand R V).

Variable J : finType.
Variable A : J -> seq 'I_V.
Variable F : J -> 'I_V -> seq 'I_V.
Variable w : J -> 'I_V -> R.
Variable L : vec.

(* the candidates of the node in creation order (trees.builders: head, sampled slot,
   fillers) *)
Definition rheo_cands (j : J) (s : 'I_V) : seq cand :=
  map Det (A j) ++ Samp s L :: map Det (F j s).

(* C1: given the history and that the sampled child is kept, s has law L *)
Definition C1 : Prop := forall s, \sum_(j : J) w j s = L s.

(* C2: the same given also the view j (the deterministic candidates before s) *)
Definition C2 : Prop := forall j s, w j s = (\sum_(t < V) w j t) * L s.

Lemma C2_C1 : C2 -> \sum_(j : J) \sum_(t < V) w j t = 1 -> C1.
Proof.
move=> h2 h1 s; under eq_bigr => j _ do rewrite h2.
by rewrite -mulr_suml h1 mul1r.
Qed.

Lemma samp_of_rheo j s : samp_of (rheo_cands j s) = Some (s, L).
Proof. by rewrite /rheo_cands samp_of_cat_det. Qed.

Theorem C1_ot_lossless (p : vec) y :
  C1 -> is_law p -> is_law L ->
  \sum_(j : J) \sum_(s < V) w j s * output_law (ot p (rheo_cands j s)) (rheo_cands j s) y
  = p y.
Proof.
move=> h1 hp hL; rewrite -(single_draft_identity y hp hL) exchange_big /=.
apply: eq_bigr => s _; rewrite -[X in _ = X * _]h1 mulr_suml; apply: eq_bigr => j _.
by rewrite (ot_output _ _ (samp_of_rheo j s)).
Qed.

(* the node's candidate scheme for a fixed view j *)
Definition view_scheme (j : J) : scheme R V :=
  foldr DetThen (SampThen L (fun s => dets (F j s))) (A j).

Lemma expect_view_scheme j f :
  expect (view_scheme j) f = \sum_(s < V) L s * f (rheo_cands j s).
Proof.
rewrite /view_scheme /rheo_cands; elim: (A j) f => [|x G IH] f /=; last exact: IH.
by apply: eq_bigr => s _; rewrite expect_dets.
Qed.

Lemma wf_view_scheme j : is_law L -> wf (view_scheme j).
Proof.
move=> hL; rewrite /view_scheme; elim: (A j) => [|x G IH] //=.
by split=> // s; elim: (F j s).
Qed.

Theorem C2_sequential_lossless (p : vec) y :
  C2 -> \sum_(j : J) \sum_(t < V) w j t = 1 -> is_law p -> is_law L ->
  \sum_(j : J) \sum_(s < V) w j s *
    output_law (sequential p (rheo_cands j s)) (rheo_cands j s) y = p y.
Proof.
move=> h2 h1 hp hL; rewrite -[RHS]mul1r -h1 mulr_suml; apply: eq_bigr => j _.
under eq_bigr => s _ do rewrite h2 -mulrA.
rewrite -mulr_sumr; congr (_ * _).
rewrite -(expect_view_scheme j (fun cs => output_law (sequential p cs) cs y)).
apply: sequential_lossless => //.
exact: wf_view_scheme.
Qed.

(* the node's law of candidate lists as an expectation, for the tree step (Tree.v) *)
Definition mixture (f : seq cand -> R) : R :=
  \sum_(j : J) \sum_(s < V) w j s * f (rheo_cands j s).

Lemma mixture_ext f g : (forall cs, f cs = g cs) -> mixture f = mixture g.
Proof. by move=> h; apply: eq_bigr => j _; apply: eq_bigr => s _; rewrite h. Qed.

Lemma mixture_scale f c : mixture (fun cs => f cs * c) = mixture f * c.
Proof.
rewrite /mixture mulr_suml; apply: eq_bigr => j _.
by rewrite mulr_suml; apply: eq_bigr => s _; rewrite mulrA.
Qed.

(* so C1 at every node makes a walk verified with ot lossless, and C2 one verified with
   sequential (tree_step_lossless) *)
Corollary node_ok_C1 (target : seq 'I_V -> vec) u :
  C1 -> is_law (target u) -> is_law L -> node_ok target mixture ot u.
Proof.
move=> h1 hp hL; split; [exact: mixture_ext|exact: mixture_scale|] => y.
exact: C1_ot_lossless.
Qed.

Corollary node_ok_C2 (target : seq 'I_V -> vec) u :
  C2 -> \sum_(j : J) \sum_(t < V) w j t = 1 -> is_law (target u) -> is_law L ->
  node_ok target mixture sequential u.
Proof.
move=> h2 h1 hp hL; split; [exact: mixture_ext|exact: mixture_scale|] => y.
exact: C2_sequential_lossless.
Qed.

(* a node whose sampled slot is kept with probability a, with C1 given that it is kept, and
   otherwise pruned or empty (any law of deterministic candidate lists): still lossless with ot.
   C1 is a statement given that the slot is kept; this closes node_ok over the other case. *)
Corollary node_ok_C1_slot (target : seq 'I_V -> vec) u (a : R) (sc : scheme R V) :
  C1 -> is_law (target u) -> is_law L -> no_samp sc ->
  node_ok target (fun f => a * mixture f + (1 - a) * expect sc f) ot u.
Proof.
move=> h1 hp hL hsc; apply: node_ok_mix2; first exact: node_ok_C1.
exact: node_ok_ot_dets.
Qed.

End Conditions.

(* Counterexamples, computed on rationals. *)

Definition Q (n d : int) : rat := n%:Q / d%:Q.
Definition law_of (V : nat) (l : seq rat) : 'I_V -> rat := fun x => nth 0 l x.

(* a boolean law check that computes *)
Definition is_lawb V (a : 'I_V -> rat) : bool :=
  all (fun x => 0 <= a x) (ords V) && (total a == 1).

Lemma is_lawbP V (a : 'I_V -> rat) : is_lawb a -> is_law a.
Proof.
case/andP=> /allP h /eqP h1; split=> // x.
by apply: h; rewrite ords_enum mem_enum.
Qed.

Definition t0 : 'I_3 := @Ordinal 3 0 erefl.
Definition t1 : 'I_3 := @Ordinal 3 1 erefl.
Definition t2 : 'I_3 := @Ordinal 3 2 erefl.

(* C1 without C2: p = (1/2, 1/2, 0), the sampled slot told L = (0, 1/2, 1/2); with
   s = 1 the deterministic child 0 is kept before it, with s = 2 it is not (a descendant
   of s displaced it in the prune). s has law L (C1), but not given the view (C2 fails). *)
Definition cx_p : 'I_3 -> rat := @law_of 3 [:: Q 1 2; Q 1 2; 0].
Definition cx_L : 'I_3 -> rat := @law_of 3 [:: 0; Q 1 2; Q 1 2].
Definition cx_A (j : bool) : seq 'I_3 := if j then [:: t0] else [::].
Definition cx_F (j : bool) (s : 'I_3) : seq 'I_3 := [::].
Definition cx_w (j : bool) (s : 'I_3) : rat :=
  if j then (if s == t1 then Q 1 2 else 0) else (if s == t2 then Q 1 2 else 0).

Lemma cx_C1 : C1 cx_w cx_L.
Proof.
move=> s; rewrite big_bool /cx_w /cx_L /law_of.
by case: s => [[|[|[|n]]] hn] //=; vm_compute.
Qed.

Lemma cx_not_C2 : ~ C2 cx_w cx_L.
Proof.
move=> /(_ true t2); rewrite -total_big.
by vm_compute.
Qed.

Definition cx_mixture (rule : ('I_3 -> rat) -> seq (cand rat_realFieldType 3) -> transition _ _)
    (y : 'I_3) : rat :=
  total (fun s => cx_w true s * output_law (rule cx_p (rheo_cands cx_A cx_F cx_L true s))
                                             (rheo_cands cx_A cx_F cx_L true s) y) +
  total (fun s => cx_w false s * output_law (rule cx_p (rheo_cands cx_A cx_F cx_L false s))
                                              (rheo_cands cx_A cx_F cx_L false s) y).

Lemma cx_mixtureE rule y :
  cx_mixture rule y =
  \sum_(j : bool) \sum_(s < 3) cx_w j s *
     output_law (rule cx_p (rheo_cands cx_A cx_F cx_L j s)) (rheo_cands cx_A cx_F cx_L j s) y.
Proof. by rewrite /cx_mixture big_bool !total_big. Qed.

(* sequential: token 0 comes out with probability 3/4, not 1/2 *)
Theorem C1_without_C2_sequential_lossy : cx_mixture sequential t0 = Q 3 4 /\ cx_p t0 = Q 1 2.
Proof. by split; vm_compute. Qed.

(* ot on the same node: lossless, by C1_ot_lossless *)
Theorem C1_without_C2_ot_lossless y : cx_mixture ot y = cx_p y.
Proof.
rewrite cx_mixtureE; apply: C1_ot_lossless; first exact: cx_C1.
  by apply: is_lawbP; vm_compute.
by apply: is_lawbP; vm_compute.
Qed.

(* The negative control: the kept sampled token size-biased, drawn from L^2 / sum L^2
   (what a proxy equal to the token's own probability does), but verified as s ~ L.
   p = (1/2, 1/2), L = (1/4, 3/4): ot outputs token 0 with probability 2/5. *)
Definition nc_p : 'I_2 -> rat := @law_of 2 [:: Q 1 2; Q 1 2].
Definition nc_L : 'I_2 -> rat := @law_of 2 [:: Q 1 4; Q 3 4].
Definition nc_biased (rule : ('I_2 -> rat) -> seq (cand rat_realFieldType 2) -> transition _ _)
    (y : 'I_2) : rat :=
  total (fun s => nc_L s * nc_L s / total (fun t => nc_L t * nc_L t) *
                  output_law (rule nc_p [:: Samp s nc_L]) [:: Samp s nc_L] y).

Theorem size_biased_ot_lossy :
  nc_biased ot (@Ordinal 2 0 erefl) = Q 2 5 /\ nc_p (@Ordinal 2 0 erefl) = Q 1 2.
Proof. by split; vm_compute. Qed.

Theorem size_biased_sequential_lossy :
  nc_biased sequential (@Ordinal 2 0 erefl) = Q 2 5.
Proof. by vm_compute. Qed.
