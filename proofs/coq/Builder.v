(* A tree builder as a random process, and the step it feeds to a per-node walk: the extended
   output law of docs/theory.md section 4, for every vocabulary, depth and builder with the rank
   property below. Mirrors rheotheory.trees.dynamic.build_dynamic (the tree) walked by
   rheotheory.verify.walk.PerNodeWalk (the step).

   The draws. Every random choice of the builder is the token of a sampled slot, drawn from a
   law fixed by the slot (the builder of section 2.2 draws the sampled child of the node with
   path u from L_u = q(. | u) restricted to the tail, a function of u). The draws are modelled
   as independent, one per slot, all made in advance (`draws`: a finite function from the slots
   P to tokens, with the product law `weight`); a lazy builder that draws a slot only when it
   reads it has the same law. `slot u` is the slot of the node with path u.

   The builder's outcome. `cands w u` is what the verifier sees at the node with path u under
   the draws w: its kept children in creation order, each deterministic or sampled with the law
   it was drawn from. A node is kept when every node on its path is among its parent's kept
   children (`kept`). Nothing else is assumed about how the tree was built: its layers, top-K
   expansions, scores and global prune are whatever they are, provided the rank property holds.

   The rank property (`rank_property`). Along every path z, the sampled slots of the nodes on z can
   be ranked so that what a node's verifier reads (whether the node is kept, and its `view`:
   for ot whether its sampled child is kept, for sequential also its kept head) does not depend
   on the draw of its own slot, nor on the draw of any slot ranked at or after it. For the
   builder of section 2.2 the rank is the order of the sampled children by (score, creation
   order); Dynamic.v derives the property from the builder's scores, layers and prune.

   The theorem (`builder_lossless`): the walk of any verifier whose output law at a node, given
   the node's view, averages to the target over the node's own draw has the target's extended
   output law at every length, bonus token included. It does not go through C1 at every node
   (Conditions.v): C1, conditioned on the views of all ancestors, can fail on RheoSampling's
   trees while the walk stays lossless (docs/theory.md section 8.1). *)
From mathcomp Require Import all_ssreflect ssralg ssrnum finfun.
From Rheo Require Import Laws Sequential Ot Tree.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import Order.TTheory GRing.Theory Num.Theory.
Local Open Scope ring_scope.

Section Draws.

Variable R : realFieldType.
Variable V : nat.

Notation vec := ('I_V -> R).

Variable P : finType.
Variable Lw : P -> vec.

(* every slot draws from a law *)
Definition slot_laws : Prop := forall x, is_law (Lw x).

Definition draws := {ffun P -> 'I_V}.

Definition weight (w : draws) : R := \prod_(x : P) Lw x (w x).

(* the expectation over the draws *)
Definition Ew (f : draws -> R) : R := \sum_(w : draws) weight w * f w.

Definition upd (w : draws) (x : P) (t : 'I_V) : draws :=
  [ffun y => if y == x then t else w y].

(* f does not read the draw of slot x (on the draws of positive probability) *)
Definition indep (T : Type) (x : P) (f : draws -> T) : Prop :=
  forall (w : draws) (t : 'I_V), weight w != 0 -> Lw x t != 0 -> f (upd w x t) = f w.

Lemma upd_at w x t : upd w x t x = t.
Proof. by rewrite ffunE eqxx. Qed.

Lemma upd_upd w x t : upd (upd w x t) x (w x) = w.
Proof. by apply/ffunP => y; rewrite !ffunE; case: eqP => [->|]. Qed.

Lemma upd_other w x t y : y != x -> upd w x t y = w y.
Proof. by move=> /negPf hy; rewrite ffunE hy. Qed.

Lemma weight_ge0 w : slot_laws -> 0 <= weight w.
Proof. by move=> Lw_law; apply: prodr_ge0 => x _; case: (Lw_law x). Qed.

Lemma weight_pos w x : slot_laws -> weight w != 0 -> 0 < Lw x (w x).
Proof.
move=> Lw_law /prodf_neq0 h; rewrite lt_neqAle eq_sym (h x isT) /=.
by case: (Lw_law x).
Qed.

Lemma Ew1 : slot_laws -> Ew (fun _ => 1) = 1.
Proof.
move=> Lw_law; rewrite /Ew; under eq_bigr do rewrite mulr1.
rewrite /weight -(bigA_distr_bigA (fun x t => Lw x t)) /=.
by rewrite big1 // => x _; rewrite -total_big; case: (Lw_law x).
Qed.

Lemma Ew_ext f g : (forall w, weight w != 0 -> f w = g w) -> Ew f = Ew g.
Proof.
move=> h; apply: eq_bigr => w _; have [->|hw] := eqVneq (weight w) 0.
  by rewrite !mul0r.
by rewrite h.
Qed.

Lemma EwD f g : Ew (fun w => f w + g w) = Ew f + Ew g.
Proof. by rewrite /Ew -big_split; apply: eq_bigr => w _; rewrite mulrDr. Qed.

Lemma EwZ c f : Ew (fun w => c * f w) = c * Ew f.
Proof. by rewrite /Ew mulr_sumr; apply: eq_bigr => w _; rewrite mulrCA. Qed.

(* The draw of slot x, averaged with everything else fixed: if F reads the draws only through
   its second argument at x, E[F w (w x)] = E[sum_s L_x(s) F w s]. *)
Theorem Ew_draw (x : P) (F : draws -> 'I_V -> R) :
  slot_laws -> (forall s, indep x (fun w => F w s)) ->
  Ew (fun w => F w (w x)) = Ew (fun w => \sum_(s < V) Lw x s * F w s).
Proof.
move=> Lw_law hF; pose M w := \prod_(y | y != x) Lw y (w y).
have hW w : weight w = Lw x (w x) * M w by rewrite /weight (bigD1 x).
have hM w t : M (upd w x t) = M w.
  by apply: eq_bigr => y hy; rewrite upd_other.
have L1 : \sum_(t < V) Lw x t = 1 by rewrite -total_big; case: (Lw_law x).
pose phi (wt : draws * 'I_V) := (upd wt.1 x wt.2, wt.1 x).
have phiK : involutive phi by case=> w t; rewrite /phi /= upd_at upd_upd.
have eA : Ew (fun w => F w (w x)) =
    \sum_(w : draws) \sum_(t < V) Lw x t * (weight w * F w (w x)).
  by rewrite /Ew; apply: eq_bigr => w _; rewrite -mulr_suml L1 mul1r.
have eB : Ew (fun w => \sum_(s < V) Lw x s * F w s) =
    \sum_(w : draws) \sum_(t < V) weight w * (Lw x t * F w t).
  by rewrite /Ew; apply: eq_bigr => w _; rewrite mulr_sumr.
rewrite eA eB !pair_bigA /= [RHS](reindex_inj (inv_inj phiK)) /=.
apply: eq_bigr => -[w t] _ /=; rewrite !hW upd_at hM.
have [->|ht] := eqVneq (Lw x t) 0; first by rewrite !mul0r.
have [hwx|hwx] := eqVneq (Lw x (w x)) 0; first by rewrite hwx !mul0r !mulr0.
have [hMw|hMw] := eqVneq (M w) 0; first by rewrite hMw !(mulr0, mul0r).
rewrite (hF (w x) w t _ ht); last by rewrite hW mulf_neq0.
by rewrite -[RHS]mulrA; congr (_ * _); rewrite [RHS]mulrCA mulrA.
Qed.

Section Expansion.

(* a product of factors p_i + D_i(w, draw of slot X i); D_i averages to 0 over its own draw
   and, with the others, reads only the draws of slots ranked after it *)
Variable X : nat -> P.
Variable rank : nat -> nat.
Variable pf : nat -> R.
Variable D : nat -> draws -> 'I_V -> R.

Definition fac i (w : draws) := pf i + D i w (w (X i)).

Lemma max_rank (S : seq nat) :
  S != [::] -> exists2 j, j \in S & forall i, i \in S -> (rank i <= rank j)%N.
Proof.
elim: S => // a S IH _; have [->|hS] := eqVneq S [::].
  by exists a; rewrite ?mem_seq1 // => i; rewrite mem_seq1 => /eqP ->.
have [j hj hmax] := IH hS; case: (leqP (rank a) (rank j)) => h.
  by exists j; rewrite ?in_cons ?hj ?orbT // => i; rewrite in_cons => /orP [/eqP ->|/hmax].
exists a; first by rewrite in_cons eqxx.
move=> i; rewrite in_cons => /orP [/eqP ->//|/hmax hi].
exact: leq_trans hi (ltnW h).
Qed.

Theorem Ew_prod (S : seq nat) :
  slot_laws -> uniq S -> {in S &, injective X} ->
  (forall i j s, i \in S -> j \in S -> (rank i <= rank j)%N -> indep (X j) (fun w => D i w s)) ->
  (forall i w, i \in S -> \sum_(s < V) Lw (X i) s * D i w s = 0) ->
  Ew (fun w => \prod_(i <- S) fac i w) = \prod_(i <- S) pf i.
Proof.
move=> Lw_law; have [n] := ubnP (size S); elim: n S => // n IH S hn hu hX hind h0.
have [->|hS] := eqVneq S [::].
  by under [LHS]eq_bigr do rewrite big_nil; rewrite -/(Ew _) Ew1 ?big_nil.
have [j hj hmax] := max_rank hS.
have hperm := perm_to_rem hj.
have hrem : {subset rem j S <= S} by apply: mem_rem.
have hne i : i \in rem j S -> i != j.
  by rewrite (mem_rem_uniq _ hu) => /andP [].
have hsz : (size (rem j S) < n)%N.
  by rewrite size_rem // -ltnS (leq_trans _ hn) // prednK // lt0n size_eq0.
rewrite [RHS](perm_big _ hperm) big_cons /=.
have -> : Ew (fun w => \prod_(i <- S) fac i w) =
    Ew (fun w => pf j * \prod_(i <- rem j S) fac i w +
                 D j w (w (X j)) * \prod_(i <- rem j S) fac i w).
  by apply: Ew_ext => w _; rewrite (perm_big _ hperm) big_cons /= [fac j w]/fac mulrDl.
rewrite EwD EwZ IH ?rem_uniq //; last 3 first.
- by move=> i1 i2 /hrem h1 /hrem h2; apply: hX.
- by move=> i1 i2 s /hrem h1 /hrem h2; apply: hind.
- by move=> i w /hrem; apply: h0.
rewrite -[RHS]addr0; congr (_ + _).
rewrite (Ew_draw (F := fun w s => D j w s * \prod_(i <- rem j S) fac i w)) //=.
  transitivity (Ew (fun _ => 0)); last by rewrite /Ew big1 // => w _; rewrite mulr0.
  apply: Ew_ext => w _.
  under eq_bigr do rewrite mulrA; by rewrite -mulr_suml h0 ?mul0r.
move=> s w t hw ht; rewrite (hind j j s hj hj (leqnn _) w t hw ht); congr (_ * _).
apply: eq_big_seq => i hi; rewrite /fac (hind i j _ (hrem _ hi) hj (hmax _ (hrem _ hi)) w t hw ht).
rewrite upd_other //; apply: contra (hne _ hi) => /eqP /(hX _ _ (hrem _ hi) hj) ->.
by rewrite eqxx.
Qed.

End Expansion.

End Draws.

Arguments upd {V P} _ _ _.
Arguments indep {R V P} _ {T} _ _.

Section Builder.

Variable R : realFieldType.
Variable V : nat.

Notation vec := ('I_V -> R).
Notation cand := (cand R V).

Variable P : finType.
Variable Lw : P -> vec.

Notation draws := (draws V P).
Notation weight := (weight Lw).
Notation indep := (indep Lw).

(* the target law after each prefix, p(. | u) *)
Variable target : seq 'I_V -> vec.

(* the slot of the sampled child of the node with path u, and its law *)
Variable slot : seq 'I_V -> P.
Variable depth : nat.

(* distinct nodes above the depth have distinct slots *)
Definition slot_inj_on : Prop :=
  forall u v, (size u < depth)%N -> (size v < depth)%N -> slot u = slot v -> u = v.

Definition slaw (u : seq 'I_V) : vec := Lw (slot u).

(* the verifier (a per-node rule) and the builder's outcome *)
Variable ver : vec -> seq cand -> transition R V.
Variable cands : draws -> seq 'I_V -> seq cand.

(* the node u ++ z is kept, given that u is *)
Fixpoint kept_below (w : draws) (u z : seq 'I_V) : bool :=
  if z is y :: z' then (y \in map token (cands w u)) && kept_below w (rcons u y) z' else true.

Definition kept (w : draws) (u : seq 'I_V) : bool := kept_below w [::] u.

(* PerNodeWalk on the tree the draws w build, to depth n below u (Tree.v's walk, each node's
   candidate list given: a point mass) *)
Fixpoint walk_of (w : draws) (u : seq 'I_V) (n : nat) : walk R V :=
  if n is n'.+1 then
    Node (fun f => f (cands w u)) ver
         (fun cs i => if tok_at cs i is Some x then walk_of w (rcons u x) n' else Bonus R V)
  else Bonus R V.

(* the law of the output token at u *)
Definition out (w : draws) (u : seq 'I_V) (y : 'I_V) : R :=
  output_law (ver (target u) (cands w u)) (cands w u) y.

(* the verifier emits no candidate's token: an output token that a kept child holds is
   continued into *)
Definition emit_ok : Prop := forall w u y,
  weight w != 0 -> y \in map token (cands w u) -> emit (ver (target u) (cands w u)) y = 0.

(* what the output law reads: the node's view, and the draw of its own slot; averaged over
   that draw it is the target, whatever the view *)
Variable T : Type.
Variable view : draws -> seq 'I_V -> T.
Variable Phi : seq 'I_V -> T -> 'I_V -> 'I_V -> R.
Definition view_ok : Prop := forall w u y,
  weight w != 0 -> out w u y = Phi u (view w u) (w (slot u)) y.

Definition given_lossless : Prop :=
  forall u v y, \sum_(s < V) slaw u s * Phi u v s y = target u y.

(* the rank property *)
Definition rank_property : Prop := forall z, exists rank : nat -> nat, forall i j,
  (i < minn (size z) depth)%N -> (j < minn (size z) depth)%N -> (rank i <= rank j)%N ->
  indep (slot (take j z)) (fun w => (kept w (take i z), view w (take i z))).

Lemma fresh_prod u z y0 :
  fresh target u z = \prod_(i < size z) target (u ++ take i z) (nth y0 z i).
Proof.
elim: z u => [|y z IH] u /=; first by rewrite big_ord0.
rewrite big_ord_recl /= ?take0 cats0 IH.
by congr (_ * _); apply: eq_bigr => i _; rewrite cat_rcons.
Qed.

Definition fact (w : draws) (u z : seq 'I_V) (n i : nat) (y0 : 'I_V) : R :=
  if (i < n)%N && kept_below w u (take i z) then out w (u ++ take i z) (nth y0 z i)
  else target (u ++ take i z) (nth y0 z i).

Lemma holders_notin (t : transition R V) (cs : seq cand) y :
  y \notin map token cs ->
  \sum_(cw <- zip cs (cont t)) (if token cw.1 == y then cw.2 else 0) = 0.
Proof.
move=> hy; have := output_law_notin t hy; rewrite output_lawE => h.
by apply: (addrI (emit t y)); rewrite addr0.
Qed.

(* given the draws, the extended output law of the walk is a product along the path: the
   node's output law while the path stays in the kept tree, the target after it leaves *)
Lemma ext_walk_of w u n z y0 :
  emit_ok -> weight w != 0 ->
  ext target (walk_of w u n) u z = \prod_(i < size z) fact w u z n i y0.
Proof.
move=> emit_cands hw; elim: z u n => [|y z IH] u n; first by rewrite big_ord0; case: n.
rewrite big_ord_recl /fact ?take0 cats0 /=.
case: n => [|n] /=.
  by rewrite (fresh_prod _ _ y0); congr (_ * _); apply: eq_bigr => i _; rewrite cat_rcons.
rewrite (cont_into_const (F := ext target (walk_of w (rcons u y) n) (rcons u y) z)); last first.
  by move=> i ->.
rewrite /out; have [hy|hy] := boolP (y \in map token (cands w u)).
  rewrite emit_cands // mul0r add0r output_lawE emit_cands // add0r mulrC IH.
  by congr (_ * _); apply: eq_bigr => i _; rewrite /fact cat_rcons.
rewrite holders_notin // mulr0 addr0 (output_law_notin _ hy) (fresh_prod _ _ y0).
by congr (_ * _); apply: eq_bigr => i _; rewrite andFb andbF cat_rcons.
Qed.

(* The end-to-end theorem: averaged over the draws, the walk on the built tree has the
   target's extended output law, for every length of z (docs/theory.md section 4) *)
Theorem builder_lossless :
  slot_laws Lw -> slot_inj_on -> emit_ok -> view_ok -> given_lossless -> rank_property ->
  forall z,
  \sum_(w : draws) weight w * ext target (walk_of w [::] depth) [::] z = fresh target [::] z.
Proof.
move=> Lw_law slot_inj emit_cands out_view Phi_lossless rank_indep.
case=> [|y0 z0].
  rewrite /= -(Ew1 Lw_law); apply: eq_bigr => w _; congr (_ * _).
  by case: (depth).
set z := y0 :: z0.
pose X i := slot (take i z).
pose pf i := target (take i z) (nth y0 z i).
pose D i w s := if (i < depth)%N && kept w (take i z)
                then Phi (take i z) (view w (take i z)) s (nth y0 z i) - pf i else 0.
have hfac w i : weight w != 0 -> fact w [::] z depth i y0 = fac X pf D i w.
  move=> hw; rewrite /fact /fac /D /kept /=; case: ifP => _; last by rewrite addr0.
  by rewrite out_view // addrC subrK.
transitivity (Ew Lw (fun w => \prod_(i < size z) fac X pf D i w)).
  apply: Ew_ext => w hw; rewrite (ext_walk_of _ _ _ y0 emit_cands hw).
  by apply: eq_bigr => i _; rewrite hfac.
set m := minn (size z) depth.
have hm : (m <= size z)%N by rewrite geq_minl.
have hsplit (F : nat -> R) : \prod_(i < size z) F i =
    \prod_(i <- iota 0 m) F i * \prod_(i <- iota m (size z - m)) F i.
  by rewrite -big_cat -iotaD subnKC // -(big_mkord xpredT F).
have hD0 w i : i \in iota m (size z - m) -> D i w (w (X i)) = 0.
  rewrite mem_iota subnKC // => /andP [hmi hiz]; rewrite /D.
  case: ltnP => // hd; have : (i < m)%N by rewrite /m leq_min hiz hd.
  by rewrite ltnNge hmi.
transitivity (Ew Lw (fun w => \prod_(i <- iota 0 m) fac X pf D i w) *
              \prod_(i <- iota m (size z - m)) pf i).
  rewrite /Ew mulr_suml; apply: eq_bigr => w _.
  rewrite (hsplit (fun i => fac X pf D i w)) mulrA; congr (_ * _).
  by apply: eq_big_seq => i hi; rewrite /fac hD0 // addr0.
have [rank hrank] := rank_indep z.
rewrite (@Ew_prod _ _ _ _ X rank pf D) ?iota_uniq //; last 3 first.
- move=> i j; rewrite !mem_iota !add0n => /andP [_ hi] /andP [_ hj].
  have hiz : (i <= size z)%N := leq_trans (ltnW hi) (geq_minl _ _).
  have hjz : (j <= size z)%N := leq_trans (ltnW hj) (geq_minl _ _).
  have hi' : (size (take i z) < depth)%N by rewrite size_takel // (leq_trans hi) ?geq_minr.
  have hj' : (size (take j z) < depth)%N by rewrite size_takel // (leq_trans hj) ?geq_minr.
  by move=> /(slot_inj _ _ hi' hj') /(congr1 size); rewrite !size_takel.
- move=> i j s; rewrite !mem_iota !add0n => /andP [_ hi] /andP [_ hj] hij w t hw ht.
  by rewrite /D; case: (hrank i j hi hj hij w t hw ht) => -> ->.
- move=> i w _; rewrite /D; case: ((i < depth)%N && kept w (take i z)); last first.
    by rewrite big1 // => s _; rewrite mulr0.
  under eq_bigr do rewrite mulrBr.
  rewrite sumrB (Phi_lossless (take i z)) -mulr_suml -total_big.
  by case: (Lw_law (slot (take i z))) => _ ->; rewrite mul1r subrr.
by rewrite -(hsplit pf) (fresh_prod _ _ y0).
Qed.

End Builder.

Arguments kept_below {R V P} _ _ _ _.
Arguments kept {R V P} _ _ _.
Arguments walk_of {R V P} _ _ _ _ _.

(* RheoSampling's slots (docs/theory.md section 2.2): at the node u, the kept head children
   (deterministic), then, if it is kept, the sampled child s_u = w (slot u) with its member law
   L_u, then kept deterministic fillers. *)
Section RheoSlots.

Variable R : realFieldType.
Variable V : nat.

Notation vec := ('I_V -> R).
Notation cand := (cand R V).

Variable P : finType.
Variable Lw : P -> vec.

Notation draws := (draws V P).
Notation weight := (weight Lw).
Notation indep := (indep Lw).

Variable target : seq 'I_V -> vec.
Variable slot : seq 'I_V -> P.
Variable depth : nat.

Notation slaw := (slaw Lw slot).

(* the kept head, whether the sampled child is kept, the kept fillers *)
Variable head : draws -> seq 'I_V -> seq 'I_V.
Variable skept : draws -> seq 'I_V -> bool.
Variable after : draws -> seq 'I_V -> seq 'I_V.

Definition rheo_cands (w : draws) (u : seq 'I_V) : seq cand :=
  map Det (head w u) ++ (if skept w u then [:: Samp (w (slot u)) (slaw u)] else [::]) ++
  map Det (after w u).

Lemma samp_of_dets (G : seq 'I_V) : samp_of (map (@Det R V) G) = None.
Proof. by elim: G. Qed.

Lemma samp_of_rheo_cands w u :
  samp_of (rheo_cands w u) = if skept w u then Some (w (slot u), slaw u) else None.
Proof. by rewrite /rheo_cands samp_of_cat_det; case: (skept w u) => //; apply: samp_of_dets. Qed.

(* the output law of ot given the sampled token s ~ L_u *)
Definition ot_given (u : seq 'I_V) (b : bool) (s y : 'I_V) : R :=
  if b then accept (target u) (Samp s (slaw u)) * (s == y)%:R +
            (1 - accept (target u) (Samp s (slaw u))) * residual (target u) (slaw u) y
  else target u y.

Lemma emit_ot_cands (p : vec) (cs : seq cand) y :
  y \in map token cs -> emit (ot p cs) y = 0.
Proof.
rewrite /ot; case: (samp_of cs) => [[s L]|] hy /=; first by rewrite hy.
exact: emit_dets_mem.
Qed.

(* RheoSampling verified with ot: lossless for every builder with the rank property, where a
   node's view is whether it and its sampled child are kept *)
Theorem rheo_ot_lossless :
  slot_laws Lw -> (forall u, is_law (target u)) -> slot_inj_on slot depth ->
  (forall z, exists rank : nat -> nat, forall i j,
     (i < minn (size z) depth)%N -> (j < minn (size z) depth)%N -> (rank i <= rank j)%N ->
     indep (slot (take j z)) (fun w => (kept rheo_cands w (take i z), skept w (take i z)))) ->
  forall z, \sum_(w : draws) weight w * ext target (walk_of ot rheo_cands w [::] depth) [::] z =
            fresh target [::] z.
Proof.
move=> Lw_law target_law slot_inj hrank z.
apply: (@builder_lossless R V P Lw target slot depth ot rheo_cands bool skept ot_given) => //.
- by move=> w u y _; apply: emit_ot_cands.
- move=> w u y _; rewrite /out /ot_given; case hs: (skept w u).
    by rewrite (ot_output _ _ (s := w (slot u)) (L := slaw u)) // samp_of_rheo_cands hs.
  by rewrite /ot samp_of_rheo_cands hs onehot_lossless.
move=> u [] y /=; last first.
  by rewrite -mulr_suml -total_big /slaw; case: (Lw_law (slot u)) => _ ->; rewrite mul1r.
exact: (single_draft_identity y (target_law u) (Lw_law (slot u))).
Qed.

(* RheoSampling verified with sequential (no fillers): lossless for every builder with the rank
   property where a node's view also holds its kept head, i.e. the kept head does not depend on
   the draws of the node's own slot or of slots ranked after it (the proxy next) *)
Definition seq_cands (w : draws) (u : seq 'I_V) : seq cand :=
  map Det (head w u) ++ (if skept w u then [:: Samp (w (slot u)) (slaw u)] else [::]).

Definition seq_given (u : seq 'I_V) (v : seq 'I_V * bool) (s y : 'I_V) : R :=
  if v.2 then output_law (sequential (target u) (map Det v.1 ++ [:: Samp s (slaw u)]))
                         (map Det v.1 ++ [:: Samp s (slaw u)]) y
  else target u y.

Lemma sequential_dets_output (p : vec) (G : seq 'I_V) y :
  is_law p -> output_law (sequential p (map Det G)) (map Det G) y = p y.
Proof.
move=> hp; have := sequential_lossless (sc := dets G) _ hp y.
by rewrite expect_dets; apply; elim: G.
Qed.

Lemma samps_ok_dets_cat (G : seq 'I_V) (cs : seq cand) :
  samps_ok cs -> samps_ok (map Det G ++ cs).
Proof. by move=> h; elim: G => //= x G ->. Qed.

Lemma wf_det_then_samp (G : seq 'I_V) (L : vec) : is_law L -> wf (det_then_samp G L).
Proof. by move=> hL; elim: G => //=. Qed.

Theorem rheo_sequential_lossless :
  slot_laws Lw -> (forall u, is_law (target u)) -> slot_inj_on slot depth ->
  (forall z, exists rank : nat -> nat, forall i j,
     (i < minn (size z) depth)%N -> (j < minn (size z) depth)%N -> (rank i <= rank j)%N ->
     indep (slot (take j z))
       (fun w => (kept seq_cands w (take i z), (head w (take i z), skept w (take i z))))) ->
  forall z, \sum_(w : draws) weight w * ext target (walk_of sequential seq_cands w [::] depth) [::] z =
            fresh target [::] z.
Proof.
move=> Lw_law target_law slot_inj hrank z.
apply: (@builder_lossless R V P Lw target slot depth sequential seq_cands _
          (fun w u => (head w u, skept w u)) seq_given) => //.
- move=> w u y hw; apply: emit_sequential_mem; rewrite /seq_cands.
  apply: samps_ok_dets_cat; case: (skept w u) => //=; split=> //; split.
    exact: Lw_law.
  exact: (weight_pos _ Lw_law hw).
- move=> w u y _; rewrite /out /seq_given /seq_cands /=; case: (skept w u) => //.
  by rewrite cats0 sequential_dets_output.
move=> u [G []] y /=; last first.
  by rewrite -mulr_suml -total_big /slaw; case: (Lw_law (slot u)) => _ ->; rewrite mul1r.
rewrite -(expect_det_then_samp G (slaw u) (fun cs => output_law (sequential (target u) cs) cs y)).
apply: sequential_lossless; last exact: target_law.
exact/wf_det_then_samp/Lw_law.
Qed.

End RheoSlots.

Arguments rheo_cands {R V P} _ _ _ _ _ _ _.
Arguments seq_cands {R V P} _ _ _ _ _ _.
