(* RheoSampling's dynamic builder (docs/theory.md sections 2.1 and 2.2,
   rheotheory.trees.dynamic.build_dynamic), and the end-to-end theorem: verified with ot it
   has the target's extended output law at every length, bonus token included, for every
   vocabulary V, width K, depth D and budget N; verified with sequential too when the proxy is
   next. What is modelled, and what is abstracted:

   - Nodes are paths u (the tokens from the root). Expanding u creates its head (`head u`, the
     deterministic children: the top m ranked draft tokens, a function of u) and, when the draft
     has mass outside the head (`hasS u`), one sampled child whose token is the draw of u's slot
     (Builder.v: every draw independent, from L_u = q(. | u) restricted to the tail, positive
     only outside the head: `tail_ok`). Fillers are not modelled (the builder with head
     m = K - 1, the default, or fillers="none").
   - The ranking of nodes by score and then creation order is an abstract strict order `ahead`
     on paths (scores as an abstract ordered type). `order_ok` states what the theory relies on:
     it is a strict order; a parent ranks ahead of its child (every proxy and every draft
     probability is at most 1, and a child is created after its parent); and the sampled child
     of u ranks the same whatever its token, against every other node, and ties with its
     alternatives (the proxy is a function of u, not of the sampled token; its creation slot is
     the same). The proxies next, tail and min-best-tail give this order; `true` (q(s)) does
     not. `next_ok` adds, for the proxy next only, that every head child ranks ahead of its
     sampled sibling (q_v of a head token is at least q_v of the best tail token; ties go to the
     earlier slot).
   - Layers and expansion: the root is expanded; a node of depth 1 .. D-1 is expanded when fewer
     than K created nodes of its layer rank ahead of it (the K best of each layer); children
     exist only under expanded nodes. The global prune keeps a node when fewer than N created
     non-root nodes rank ahead of it (the best N; a kept node's parent is then kept too).

   From these, `rank_ok` proves Builder.v's rank property: what a node's verifier reads depends
   only on the draws of slots ranked ahead of its own. C1 given the whole history is not needed,
   nor true of this builder (docs/theory.md section 8.1). *)
From mathcomp Require Import all_ssreflect ssralg ssrnum finfun.
From Rheo Require Import Laws Sequential Ot Tree Builder.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import Order.TTheory GRing.Theory Num.Theory.
Local Open Scope ring_scope.

Section Dynamic.

Variable R : realFieldType.
Variable V : nat.

Notation vec := ('I_V -> R).
Notation cand := (cand R V).

Variable P : finType.
Variable Lw : P -> vec.

Notation draws := (draws V P).
Notation weight := (weight Lw).

Variable slot : seq 'I_V -> P.
Variable depth K N : nat.
Variable head : seq 'I_V -> seq 'I_V.
Variable hasS : seq 'I_V -> bool.
Variable ahead : rel (seq 'I_V).

(* the children an expansion of u creates: the head, then the sampled child *)
Definition children (w : draws) (u : seq 'I_V) : seq 'I_V :=
  head u ++ (if hasS u then [:: w (slot u)] else [::]).

(* the paths of length n *)
Fixpoint paths (n : nat) : seq (seq 'I_V) :=
  if n is n'.+1 then [seq rcons u x | u <- paths n', x <- enum 'I_V] else [:: [::]].

Lemma size_paths n v : v \in paths n -> size v = n.
Proof.
elim: n v => [|n IH] v /=; first by rewrite mem_seq1 => /eqP ->.
by case/allpairsP => -[u x] [hu _ ->] /=; rewrite size_rcons (IH _ hu).
Qed.

(* u is expanded, given which nodes of its layer are created (c) *)
Definition expd (c : seq 'I_V -> bool) (n : nat) (u : seq 'I_V) : bool :=
  [&& c u, (n < depth)%N & (n == 0)%N || (count (fun v => c v && ahead v u) (paths n) < K)%N].

(* the created nodes of each layer *)
Fixpoint cr (w : draws) (n : nat) : seq 'I_V -> bool :=
  if n is n'.+1 then
    fun u => [&& size u == n'.+1, expd (cr w n') n' (take n' u) &
                 drop n' u \in [seq [:: x] | x <- children w (take n' u)]]
  else fun u => u == [::].

Definition created (w : draws) (u : seq 'I_V) : bool := cr w (size u) u.

Definition expanded (w : draws) (u : seq 'I_V) : bool := expd (cr w (size u)) (size u) u.

(* the created non-root nodes ranked ahead of u *)
Definition ahead_count (w : draws) (u : seq 'I_V) : nat :=
  \sum_(n < depth) count (fun v => created w v && ahead v u) (paths n.+1).

(* the global prune: the best N non-root nodes *)
Definition kept (w : draws) (u : seq 'I_V) : bool :=
  created w u && ((u == [::]) || (ahead_count w u < N)%N).

(* what the verifier reads at u: the kept head, whether the sampled child is kept *)
Definition head_kept (w : draws) (u : seq 'I_V) : seq 'I_V :=
  [seq x <- head u | kept w (rcons u x)].

Definition samp_kept (w : draws) (u : seq 'I_V) : bool :=
  hasS u && kept w (rcons u (w (slot u))).

(* the properties of the ranking (see the header) *)
Definition order_ok : Prop :=
  [/\ forall a, ~~ ahead a a,
      forall a b c, ahead a b -> ahead b c -> ahead a c,
      forall u x, ahead u (rcons u x),
      forall v x x' n, x \notin head v -> x' \notin head v -> n != rcons v x -> n != rcons v x' ->
        ahead (rcons v x) n = ahead (rcons v x') n /\ ahead n (rcons v x) = ahead n (rcons v x') &
      forall v x x', x \notin head v -> x' \notin head v -> ~~ ahead (rcons v x) (rcons v x')].

Definition next_ok : Prop :=
  forall v x s, x \in head v -> s \notin head v -> ahead (rcons v x) (rcons v s).

(* the slot of u draws only outside u's head *)
Definition tail_ok : Prop :=
  forall v x, (size v < depth)%N -> Lw (slot v) x != 0 -> x \notin head v.

Lemma seq1_inj : injective (fun x : 'I_V => [:: x]).
Proof. by move=> a b [->]. Qed.

Lemma created_rcons w u x : created w (rcons u x) = expanded w u && (x \in children w u).
Proof.
rewrite /created size_rcons /= size_rcons eqxx /= -cats1 take_size_cat // drop_size_cat //.
by rewrite (mem_map seq1_inj).
Qed.

Lemma expanded_created w u : expanded w u -> created w u.
Proof. by case/andP. Qed.

Lemma expanded_size w u : expanded w u -> (size u < depth)%N.
Proof. by case/and3P. Qed.

Section Order.

Lemma ord_irr : order_ok -> forall a, ~~ ahead a a. Proof. by case. Qed.
Lemma ord_trans : order_ok -> forall a b c, ahead a b -> ahead b c -> ahead a c.
Proof. by case. Qed.
Lemma ord_par : order_ok -> forall u x, ahead u (rcons u x). Proof. by case. Qed.

Lemma ahead_asym a b : order_ok -> ahead a b -> ~~ ahead b a.
Proof.
move=> ho hab; apply/negP => /(ord_trans ho hab); apply/negP; exact: ord_irr.
Qed.

(* a ranks ahead of b or is b *)
Definition aheq (a b : seq 'I_V) : bool := (a == b) || ahead a b.

Lemma aheq_trans a b c : order_ok -> aheq a b -> ahead b c -> ahead a c.
Proof. by move=> ho; case/orP => [/eqP ->//|hab hbc]; apply: ord_trans hab hbc. Qed.

(* the draw of v's slot, changed from w's to t, moves no node that v's sampled child (with
   either token) does not rank ahead of *)
Definition free (w : draws) (v : seq 'I_V) (t : 'I_V) (n : seq 'I_V) : Prop :=
  forall s, s \in [:: w (slot v); t] -> ~~ aheq (rcons v s) n.

Lemma free_ahead w v t n n' : order_ok -> free w v t n -> ahead n' n -> free w v t n'.
Proof.
move=> ho h hn s hs; apply/negP => /(aheq_trans ho) /(_ hn) hsn.
by move: (h s hs); rewrite /aheq hsn orbT.
Qed.

Lemma free_parent w v t u x : order_ok -> free w v t (rcons u x) -> free w v t u.
Proof. by move=> ho h; apply: free_ahead ho h (ord_par ho u x). Qed.

Lemma children_upd w v t u :
  slot_inj_on slot depth -> (size v < depth)%N -> (size u < depth)%N -> u != v ->
  children (upd w (slot v) t) u = children w u.
Proof.
move=> hinj hv hu huv; rewrite /children ffunE.
by case: eqP => // /(hinj _ _ hu hv) /eqP; rewrite (negPf huv).
Qed.

Theorem created_upd w v t n :
  order_ok -> slot_inj_on slot depth -> (size v < depth)%N -> free w v t n ->
  created (upd w (slot v) t) n = created w n.
Proof.
move=> ho hinj hv; have [k] := ubnP (size n); elim: k n => // k IH n hk hfree.
case/lastP: n hk hfree => [//|u x] hk hfree; rewrite !created_rcons.
have hku : (size u < k)%N by move: hk; rewrite size_rcons ltnS.
have hexp : expanded (upd w (slot v) t) u = expanded w u.
  rewrite /expanded /expd -!/(created _ u) IH //; last exact: free_parent ho hfree.
  congr [&& _, _ & _]; congr (_ || _); congr (_ < _)%N; apply: eq_in_count => v' hv' /=.
  have hs : size v' = size u by apply: size_paths hv'.
  case hva: (ahead v' u); rewrite ?andbF ?andbT //.
  have hk' : (size v' < k)%N by rewrite hs.
  by have := IH v' hk' (free_ahead ho (free_parent ho hfree) hva); rewrite /created hs.
rewrite hexp; case he: (expanded w u) => //=.
have hu := expanded_size he.
have [?|huv] := eqVneq u v; last by rewrite (@children_upd w v t u hinj hv hu huv).
subst u.
rewrite /children !mem_cat upd_at; case: (x \in head v) => //=.
case: (hasS v) => //; rewrite !mem_seq1.
have hx s : s \in [:: w (slot v); t] -> x != s.
  by move=> hs; apply: contraNneq (hfree s hs) => ->; rewrite /aheq eqxx.
by rewrite (negPf (hx t _)) ?(negPf (hx (w (slot v)) _)) // !inE eqxx ?orbT.
Qed.

Lemma expanded_upd w v t u :
  order_ok -> slot_inj_on slot depth -> (size v < depth)%N -> free w v t u ->
  expanded (upd w (slot v) t) u = expanded w u.
Proof.
move=> ho hinj hv hfree; rewrite /expanded /expd -!/(created _ u) created_upd //.
congr [&& _, _ & _]; congr (_ || _); congr (_ < _)%N; apply: eq_in_count => v' hv' /=.
have hs : size v' = size u by apply: size_paths hv'.
case hva: (ahead v' u); rewrite ?andbF ?andbT //.
by have := @created_upd w v t v' ho hinj hv (free_ahead ho hfree hva); rewrite /created hs.
Qed.

Lemma ahead_count_upd w v t n :
  order_ok -> slot_inj_on slot depth -> (size v < depth)%N -> free w v t n ->
  ahead_count (upd w (slot v) t) n = ahead_count w n.
Proof.
move=> ho hinj hv hfree; apply: eq_bigr => m _; apply: eq_count => v' /=.
case hva: (ahead v' n); rewrite ?andbF ?andbT //.
by rewrite (@created_upd w v t v' ho hinj hv (free_ahead ho hfree hva)).
Qed.

Theorem kept_upd w v t n :
  order_ok -> slot_inj_on slot depth -> (size v < depth)%N -> free w v t n ->
  kept (upd w (slot v) t) n = kept w n.
Proof.
by move=> ho hinj hv hfree; rewrite /kept (created_upd ho hinj hv hfree) ahead_count_upd.
Qed.

(* a kept node's parent is kept *)
Lemma kept_parent w u x : order_ok -> kept w (rcons u x) -> kept w u.
Proof.
have hnil : (rcons u x == [::]) = false by case: u.
move=> ho; rewrite /kept created_rcons hnil /= => /andP [/andP [he _] h].
rewrite (expanded_created he) /=; case: eqP => //= _; apply: leq_ltn_trans h.
apply: leq_sum => m _; apply: sub_count => v' /andP [-> hv'] /=.
exact: (ord_trans ho hv' (ord_par ho u x)).
Qed.

Lemma kept_prefix w u z : order_ok -> kept w (u ++ z) -> kept w u.
Proof.
move=> ho; elim/last_ind: z => [|z y IH]; first by rewrite cats0.
by rewrite -rcons_cat => /(kept_parent ho).
Qed.

(* the sampled child's keptness does not depend on its own token *)
Lemma kept_samp_own (w : draws) v t :
  order_ok -> slot_inj_on slot depth -> (size v < depth)%N -> hasS v ->
  w (slot v) \notin head v -> t \notin head v ->
  kept (upd w (slot v) t) (rcons v t) = kept w (rcons v (w (slot v))).
Proof.
move=> ho hinj hv hS hs ht; set s := w (slot v); set w' := upd w (slot v) t.
have [irr _ _ blind sib] := ho.
have hfv : free w v t v.
  move=> s' _; rewrite /aheq; apply/norP; split.
    by apply/eqP => /(congr1 size); rewrite size_rcons => /esym /n_Sn.
  exact: ahead_asym ho (ord_par ho v s').
have hnil a : (rcons v a == [::]) = false by case: (v).
rewrite /kept !created_rcons (expanded_upd ho hinj hv hfv) !hnil /=.
rewrite /children upd_at hS !mem_cat !mem_seq1 !eqxx !orbT !andbT; congr (_ && (_ < N)%N).
apply: eq_bigr => m _; apply: eq_count => v' /=.
have [->|hvt] := eqVneq v' (rcons v t); first by rewrite (negPf (irr _)) (negPf (sib _ _ _ ht hs)) !andbF.
have [->|hvs] := eqVneq v' (rcons v s); first by rewrite (negPf (irr _)) (negPf (sib _ _ _ hs ht)) !andbF.
have [_ ->] := blind v t s v' ht hs hvt hvs.
case hva: (ahead v' (rcons v s)); rewrite ?andbF ?andbT //.
apply: created_upd => // s'; rewrite !inE => hs'; rewrite /aheq negb_or; apply/andP; split.
  by case/orP: hs' => /eqP ->; rewrite eq_sym ?hvs ?hvt.
apply/negP => /(ord_trans ho) /(_ hva); case/orP: hs' => /eqP ->; first exact/negP/irr.
exact/negP/sib.
Qed.

(* the draws of positive probability are outside the heads *)
Lemma weight_slot (w : draws) x : weight w != 0 -> Lw x (w x) != 0.
Proof. by move/prodf_neq0 => /(_ x isT). Qed.

Lemma count_lt (T : eqType) (a1 a2 : pred T) (s : seq T) x :
  {subset a1 <= a2} -> x \in s -> a2 x -> ~~ a1 x -> (count a1 s < count a2 s)%N.
Proof.
move=> hsub hx h2 h1; rewrite -[count a2 s]size_filter -(count_predC a1 (filter a2 s)).
rewrite count_filter.
rewrite (eq_count (a2 := a1)) => [|y /=]; last first.
  by case h: (a1 y) => //=; apply: hsub.
rewrite -{1}[count a1 s]addn0 ltn_add2l -has_count; apply/hasP; exists x => //.
by rewrite mem_filter h2.
Qed.

Section Rank.

Variable z : seq 'I_V.
Variable y0 : 'I_V.

Let m := minn (size z) depth.
Let u i := take i z.

(* a token outside u's head, representing u's sampled child *)
Definition rep (v : seq 'I_V) : 'I_V := odflt y0 [pick x | x \notin head v].

Let sg i := rcons (u i) (rep (u i)).

(* the rank of the sampled slot of the i-th node of z: how many of those slots rank ahead *)
Definition rank (i : nat) : nat := count (fun j => ahead (sg j) (sg i)) (iota 0 m).

Lemma rep_tail v x : x \notin head v -> rep v \notin head v.
Proof. by move=> hx; rewrite /rep; case: pickP => [y ->|/(_ x)] //=; rewrite hx. Qed.

Lemma rank_ahead i j :
  order_ok -> (i < m)%N -> (j < m)%N -> (rank i <= rank j)%N -> i != j -> ~~ ahead (sg j) (sg i).
Proof.
move=> ho hi hj hr hij; apply/negP => hji; move: hr; rewrite leqNgt => /negP; apply.
apply: (count_lt (x := j)) => [k|||]; rewrite ?mem_iota ?hj //=.
- by move=> hk; exact: (ord_trans ho hk hji).
exact: ord_irr.
Qed.

Lemma u_size i : (i < m)%N -> size (u i) = i.
Proof. by move=> hi; rewrite size_takel // (leq_trans (ltnW hi)) ?geq_minl. Qed.

Lemma u_depth i : (i < m)%N -> (size (u i) < depth)%N.
Proof. by move=> hi; rewrite u_size // (leq_trans hi) ?geq_minr. Qed.

Lemma u_inj i j : (i < m)%N -> (j < m)%N -> u i = u j -> i = j.
Proof. by move=> hi hj /(congr1 size); rewrite !u_size. Qed.

(* the draw of the j-th node's slot does not move a node n ranking at or ahead of a sampled child
   of the i-th node, when the j-th slot does not rank ahead of the i-th; unless n is the j-th
   node's sampled child itself *)
Lemma free_rank (w : draws) t i j n x :
  order_ok -> tail_ok -> (i < m)%N -> (j < m)%N -> (rank i <= rank j)%N ->
  weight w != 0 -> Lw (slot (u j)) t != 0 ->
  x \notin head (u i) -> aheq n (rcons (u i) x) ->
  n \notin [seq rcons (u j) s | s <- [:: w (slot (u j)); t]] ->
  free w (u j) t n.
Proof.
move=> ho htail hi hj hr hw ht hx hn hnj s hs.
have [irr _ _ blind sib] := ho.
have hsj : s \notin head (u j).
  move: hs; rewrite !inE => /orP [] /eqP ->; apply: htail (u_depth hj) _ => //.
  exact: weight_slot.
rewrite /aheq negb_or; apply/andP; split.
  by apply: contra hnj => /eqP <-; apply/mapP; exists s.
apply/negP => hsn.
have hsx : ahead (rcons (u j) s) (rcons (u i) x).
  case/orP: hn => [/eqP <-|]; first exact: hsn.
  by move=> h; exact: (ord_trans ho hsn h).
have [eij|nij] := eqVneq i j.
  by move: hsx hx; rewrite eij => hsx' hx'; exact: (negP (sib _ _ _ hsj hx') hsx').
have hne a b : rcons (u i) a != rcons (u j) b.
  by apply/negP => /eqP /rcons_inj [/(u_inj hi hj) /eqP]; rewrite (negPf nij).
have hne' a b : rcons (u j) b != rcons (u i) a by rewrite eq_sym.
have [_ e] := blind (u i) x (rep (u i)) (rcons (u j) s) hx (rep_tail hx) (hne' _ _) (hne' _ _).
have [e' _] := blind (u j) s (rep (u j)) (sg i) hsj (rep_tail hsj) (hne _ _) (hne _ _).
by move: hsx; rewrite e e'; apply/negP; apply: rank_ahead.
Qed.

(* a node of z is not the sampled child of a node whose slot does not rank ahead of its own *)
Lemma not_through (w : draws) t i j :
  order_ok -> tail_ok -> (i < m)%N -> (j < m)%N -> (rank i <= rank j)%N ->
  weight w != 0 -> Lw (slot (u j)) t != 0 -> (exists x, x \notin head (u i)) ->
  u i \notin [seq rcons (u j) s | s <- [:: w (slot (u j)); t]].
Proof.
move=> ho htail hi hj hr hw ht [x hx]; have [irr _ par blind sib] := ho.
apply/mapP => -[s hs hu].
have hsj : s \notin head (u j).
  move: hs; rewrite !inE => /orP [] /eqP ->; apply: htail (u_depth hj) _ => //.
  exact: weight_slot.
have nij : i != j.
  by apply/eqP => eij; move: hu; rewrite eij => /(congr1 size); rewrite size_rcons => /n_Sn.
have hne a : sg i != rcons (u j) a.
  apply/negP => /eqP /(congr1 size); rewrite !size_rcons !u_size // => -[/eqP].
  by rewrite (negPf nij).
have [e _] := blind (u j) s (rep (u j)) (sg i) hsj (rep_tail hsj) (hne _) (hne _).
have : ahead (rcons (u j) s) (sg i) by rewrite -hu; apply: par.
by rewrite e; apply/negP; apply: rank_ahead.
Qed.

End Rank.

End Order.

(* the verifier's view of the built tree (Builder.v's RheoSampling slots, no fillers) *)
Definition dyn_cands (w : draws) (u : seq 'I_V) : seq cand :=
  rheo_cands Lw slot head_kept samp_kept (fun _ _ => [::]) w u.

Definition dyn_seq_cands (w : draws) (u : seq 'I_V) : seq cand :=
  seq_cands Lw slot head_kept samp_kept w u.

Lemma map_token_dets (G : seq 'I_V) : map token (map (@Det R V) G) = G.
Proof. by rewrite -map_comp map_id. Qed.

Lemma tokens_kept w u y :
  (y \in head_kept w u ++ (if samp_kept w u then [:: w (slot u)] else [::])) = kept w (rcons u y).
Proof.
rewrite mem_cat mem_filter /samp_kept.
case hk: (kept w (rcons u y)); rewrite ?andTb ?andFb ?orFb; last first.
  case: (hasS u); rewrite ?andFb ?andTb //; case: ifP => // hks; rewrite mem_seq1.
  by apply/negP => /eqP hy; move: hks; rewrite -hy hk.
have := hk; rewrite {1}/kept created_rcons /children mem_cat => /andP [/andP [_ hc] _].
case/orP: hc => [-> //|]; case: (hasS u) => //.
by rewrite mem_seq1 => /eqP hy; rewrite -hy hk /= mem_seq1 eqxx orbT.
Qed.

Lemma tokens_dyn w u y : (y \in map token (dyn_cands w u)) = kept w (rcons u y).
Proof.
rewrite -tokens_kept /dyn_cands /rheo_cands !map_cat !map_token_dets cats0.
by case: (samp_kept w u).
Qed.

Lemma tokens_dyn_seq w u y : (y \in map token (dyn_seq_cands w u)) = kept w (rcons u y).
Proof.
rewrite -tokens_kept /dyn_seq_cands /seq_cands !map_cat !map_token_dets.
by case: (samp_kept w u).
Qed.

(* the kept tree the walk reads is the builder's *)
Lemma kept_below_dyn (cs : draws -> seq 'I_V -> seq cand) w u z :
  order_ok -> (forall u y, (y \in map token (cs w u)) = kept w (rcons u y)) ->
  kept w u -> kept_below cs w u z = kept w (u ++ z).
Proof.
move=> ho htok; elim: z u => [|y z IH] u hu /=; first by rewrite cats0 hu.
rewrite htok; case hk: (kept w (rcons u y)); first by rewrite IH // cat_rcons.
by apply/esym/negbTE; apply: contraFN hk; rewrite -cat_rcons; apply: kept_prefix.
Qed.

Lemma kept_dyn (cs : draws -> seq 'I_V -> seq cand) w u :
  order_ok -> (forall u y, (y \in map token (cs w u)) = kept w (rcons u y)) ->
  Builder.kept cs w u = kept w u.
Proof. by move=> ho htok; rewrite /Builder.kept kept_below_dyn. Qed.

(* the rank property of Builder.v, for the view of ot (the node kept, its sampled child kept)
   and, under next_ok, for the view of sequential (also its kept head) *)
Theorem rank_ok z :
  slot_laws Lw -> order_ok -> slot_inj_on slot depth -> tail_ok ->
  exists rank : nat -> nat, forall i j,
    (i < minn (size z) depth)%N -> (j < minn (size z) depth)%N -> (rank i <= rank j)%N ->
    indep Lw (slot (take j z))
      (fun w => (kept w (take i z), samp_kept w (take i z))) /\
    (next_ok -> indep Lw (slot (take j z)) (fun w => head_kept w (take i z))).
Proof.
move=> hlaw ho hinj htail; case: z => [|y0 z']; first by exists id => i j; rewrite /= min0n.
set z := y0 :: z'; exists (rank z y0) => i j hi hj hr.
have [irr _ par blind sib] := ho.
have htok v : (size v < depth)%N -> exists x, x \notin head v.
  move=> hv; have [_ L1] := hlaw (slot v).
  have : ~~ [forall x, x \in head v].
    apply/negP => /forallP hall; move: L1; rewrite total_big big1 => [/eqP|x _].
      by rewrite eq_sym oner_eq0.
    by apply/eqP; apply: contraTT (hall x); apply: htail.
  by case/forallPn => x hx; exists x.
have [xi hxi] := htok _ (u_depth hi).
have hkept w t : weight w != 0 -> Lw (slot (take j z)) t != 0 ->
    kept (upd w (slot (take j z)) t) (take i z) = kept w (take i z).
  move=> hw ht; apply: kept_upd => //; first exact: u_depth.
  apply: (@free_rank z y0 w t i j (take i z) xi) => //; first by rewrite /aheq par orbT.
  by apply: (@not_through z y0 w t i j) => //; exists xi.
split=> [w t hw ht|hnext w t hw ht]; last first.
  apply: eq_in_filter => x hx; apply: kept_upd => //; first exact: u_depth.
  have [x' hx'] := htok _ (u_depth hi).
  apply: (@free_rank z y0 w t i j (rcons (take i z) x) x') => //.
    by rewrite /aheq hnext ?orbT.
  apply/mapP => -[s hs /rcons_inj [hij hxs]]; move: hx; rewrite hxs hij.
  apply/negP; move: hs; rewrite !inE => /orP [] /eqP ->; apply: htail (u_depth hj) _ => //.
  exact: weight_slot.
congr (_, _); first exact: hkept.
rewrite /samp_kept; case hS: (hasS (take i z)) => //=.
have hsi : w (slot (take i z)) \notin head (take i z).
  by apply: htail (u_depth hi) (weight_slot _ hw).
have [eij|nij] := eqVneq i j.
  rewrite -eij upd_at in ht *; rewrite kept_samp_own //; first exact: u_depth.
  by apply: htail (u_depth hi) ht.
have hsl : slot (take i z) != slot (take j z).
  by apply/eqP => /(hinj _ _ (u_depth hi) (u_depth hj)) /(u_inj hi hj) /eqP; rewrite (negPf nij).
rewrite upd_other // kept_upd //; first exact: u_depth.
apply: (@free_rank z y0 w t i j _ (w (slot (take i z)))) => //; first by rewrite /aheq eqxx.
apply/mapP => -[s _ /rcons_inj [/(u_inj hi hj) /eqP]]; by rewrite (negPf nij).
Qed.

(* The end-to-end theorems. For every vocabulary, depth, width K and budget N, every target,
   every draft (its head and tail laws), and every ranking with the properties of order_ok:
   RheoSampling verified with ot has the target's extended output law at every length, bonus
   token included; with sequential too when the ranking has next_ok (the proxy next). *)
Theorem rheo_dynamic_ot_lossless (target : seq 'I_V -> vec) :
  slot_laws Lw -> (forall u, is_law (target u)) -> slot_inj_on slot depth ->
  order_ok -> tail_ok ->
  forall z, \sum_(w : draws) weight w * ext target (walk_of ot dyn_cands w [::] depth) [::] z =
            fresh target [::] z.
Proof.
move=> hlaw htarget hinj ho htail; apply: rheo_ot_lossless => // z.
have [rk hrk] := rank_ok z hlaw ho hinj htail; exists rk => i j hi hj hr w t hw ht.
have [h _] := hrk i j hi hj hr.
rewrite !(kept_dyn _ ho (tokens_dyn _)); exact: h.
Qed.

Theorem rheo_dynamic_sequential_lossless (target : seq 'I_V -> vec) :
  slot_laws Lw -> (forall u, is_law (target u)) -> slot_inj_on slot depth ->
  order_ok -> next_ok -> tail_ok ->
  forall z,
  \sum_(w : draws) weight w * ext target (walk_of sequential dyn_seq_cands w [::] depth) [::] z =
  fresh target [::] z.
Proof.
move=> hlaw htarget hinj ho hnext htail; apply: rheo_sequential_lossless => // z.
have [rk hrk] := rank_ok z hlaw ho hinj htail; exists rk => i j hi hj hr w t hw ht.
have [h1 h2] := hrk i j hi hj hr.
rewrite !(kept_dyn _ ho (tokens_dyn_seq _)).
have [-> ->] : kept (upd w (slot (take j z)) t) (take i z) = kept w (take i z) /\
               samp_kept (upd w (slot (take j z)) t) (take i z) = samp_kept w (take i z).
  by case: (h1 w t hw ht) => -> ->.
by rewrite (h2 hnext w t hw ht).
Qed.

End Dynamic.
