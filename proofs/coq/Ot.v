(* The ot rule (rheotheory.verify.rules.ot): deterministic candidates plus one sampled
   candidate s ~ L. Resolve s first against the original target: accept it with
   min(1, p(s)/L(s)); otherwise draw Y from norm((p - L)+) and continue into the first
   candidate holding Y, else emit Y. Lossless for every vocabulary, with its acceptance
   p(G) + sum_x min(p(x), L(x)) when L vanishes on G, and that value is the best any
   lossless verifier attains for this candidate set. *)
From mathcomp Require Import all_ssreflect ssralg ssrnum.
From Rheo Require Import Laws Sequential.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import Order.TTheory GRing.Theory Num.Theory.
Local Open Scope ring_scope.

Section Ot.

Variable R : realFieldType.
Variable V : nat.

Notation vec := ('I_V -> R).
Notation cand := (cand R V).

Definition is_samp (c : cand) : bool := if c is Samp _ _ then true else false.

(* the (first) sampled candidate: its token and the law it was drawn from *)
Fixpoint samp_of (cs : seq cand) : option ('I_V * vec) :=
  match cs with
  | [::] => None
  | Samp s L :: _ => Some (s, L)
  | Det _ :: cs' => samp_of cs'
  end.

(* the continue weights of rules.ot: the sampled candidate gets a (`marked` once it was
   passed); the first candidate holding each token y gets m(y) = (1 - a) r(y), the
   residual mass routed into it (`seen`: the tokens of the earlier candidates) *)
Fixpoint ot_cont (a : R) (m : vec) (marked : bool) (seen : seq 'I_V) (cs : seq cand) :
    seq R :=
  match cs with
  | [::] => [::]
  | c :: cs' =>
      ((if is_samp c && ~~ marked then a else 0) +
       (if token c \in seen then 0 else m (token c)))
      :: ot_cont a m (marked || is_samp c) (token c :: seen) cs'
  end.

(* rules.ot (the Python rule refuses more than one sampled candidate; here the first one
   is resolved) *)
Definition ot (p : vec) (cs : seq cand) : transition R V :=
  match samp_of cs with
  | Some (s, L) =>
      let a := accept p (Samp s L) in
      let m := fun y => (1 - a) * residual p L y in
      Transition (ot_cont a m false [::] cs)
                 (fun y => if y \in map token cs then 0 else m y)
  | None => onehot p cs
  end.

Lemma ot_cont_sum a m marked seen cs y :
  \sum_(cw <- zip cs (ot_cont a m marked seen cs)) (if token cw.1 == y then cw.2 else 0) =
  (if samp_of cs is Some (s, _) then (if ~~ marked && (s == y) then a else 0) else 0) +
  (if (y \in map token cs) && (y \notin seen) then m y else 0).
Proof.
elim: cs marked seen => [|c cs IH] marked seen /=; first by rewrite big_nil addr0.
rewrite big_cons IH /= !in_cons.
case: c => [x|s L] /=.
- rewrite orbF; case: (eqVneq x y) => [<-|xy].
    rewrite ?eqxx /= ?andbF ?addr0 ?add0r addrC; congr (_ + _).
    by case: (x \in seen).
  by rewrite add0r.
- have -> : (if samp_of cs is Some (s0, _) then
      (if ~~ (marked || true) && (s0 == y) then a else 0) else 0) = 0.
    by case: (samp_of cs) => [[s0 L0]|] //; rewrite orbT.
  rewrite add0r; case: (eqVneq s y) => [<-|sy] /=.
    by rewrite andbF addr0 andbT; case: (s \in seen) => //=.
  by rewrite andbF !add0r.
Qed.

(* Given s, the output token has law a delta_s + (1 - a) norm((p - L)+), whatever the
   deterministic candidates are *)
Theorem ot_output (p : vec) (cs : seq cand) s L y :
  samp_of cs = Some (s, L) ->
  output_law (ot p cs) cs y =
  accept p (Samp s L) * (s == y)%:R + (1 - accept p (Samp s L)) * residual p L y.
Proof.
move=> hs; rewrite output_lawE /ot hs /= ot_cont_sum hs /= ?in_nil ?andbT.
case: (s == y); rewrite ?mulr1 ?mulr0 ?add0r ?addr0;
  by case: (y \in map token cs); rewrite ?add0r ?addr0 // addrC.
Qed.

(* a scheme with no sampled candidate, and with exactly one on every path *)
Fixpoint no_samp (sc : scheme R V) : Prop :=
  match sc with
  | Done => True
  | DetThen _ k => no_samp k
  | SampThen _ _ => False
  end.

Fixpoint one_samp (sc : scheme R V) : Prop :=
  match sc with
  | Done => False
  | DetThen _ k => one_samp k
  | SampThen L k => is_law L /\ forall s, no_samp (k s)
  end.

Fixpoint det_tokens (sc : scheme R V) : seq 'I_V :=
  match sc with
  | DetThen x k => x :: det_tokens k
  | _ => [::]
  end.

Lemma expect_no_samp sc f : no_samp sc -> expect sc f = f (map Det (det_tokens sc)).
Proof. by elim: sc f => [|x k IH|L k IH] f //= /IH ->. Qed.

Lemma samp_of_cat_det G cs :
  samp_of (map Det G ++ cs) = samp_of cs.
Proof. by elim: G. Qed.

(* Over a scheme with exactly one sampled candidate (deterministic candidates before it,
   and after it possibly depending on the sampled token, as RheoSampling's fillers), a
   function of the candidates that depends only on the sampled token and its law averages
   to what it averages to under one draw from that law *)
Lemma expect_one_samp sc (F : seq cand -> R) (h : 'I_V -> vec -> R) (c : R) :
  one_samp sc ->
  (forall cs s L, samp_of cs = Some (s, L) -> F cs = h s L) ->
  (forall L, is_law L -> \sum_(s < V) L s * h s L = c) ->
  expect sc F = c.
Proof.
elim: sc F => [|x k IH|L k IH] F //= hk hF hc.
  by apply: IH => // cs s L hs; apply: hF.
case: hk => hL hk; rewrite -(hc L hL); apply: eq_bigr => s _; congr (_ * _).
by rewrite expect_no_samp //; apply: hF.
Qed.

Lemma single_draft_identity (p L : vec) y :
  is_law p -> is_law L ->
  \sum_(s < V) L s * (accept p (Samp s L) * (s == y)%:R +
                      (1 - accept p (Samp s L)) * residual p L y) = p y.
Proof.
move=> hp hL; rewrite -(single_draft_lossless y hp hL); apply: eq_bigr => s _.
by rewrite output_sequential_cons /= output_lawE big_nil addr0.
Qed.

Theorem ot_lossless (sc : scheme R V) (p : vec) y :
  one_samp sc -> is_law p ->
  expect sc (fun cs => output_law (ot p cs) cs y) = p y.
Proof.
move=> h1 hp; apply: (expect_one_samp
  (h := fun s L => accept p (Samp s L) * (s == y)%:R +
                   (1 - accept p (Samp s L)) * residual p L y)) => //.
  by move=> cs s L hs; apply: ot_output.
by move=> L hL; apply: single_draft_identity.
Qed.

(* The RheoSampling node with head G: G deterministic, then s ~ L *)
Definition det_then_samp (G : seq 'I_V) (L : vec) : scheme R V :=
  foldr (@DetThen R V) (SampThen L (fun _ => Done)) G.

Lemma one_samp_det_then_samp G L : is_law L -> one_samp (det_then_samp G L).
Proof. by move=> hL; elim: G => //=. Qed.

Lemma expect_det_then_samp G L f :
  expect (det_then_samp G L) f = \sum_(s < V) L s * f (map Det G ++ [:: Samp s L]).
Proof. by elim: G f => [|x G IH] f //=; rewrite IH. Qed.

Corollary ot_lossless_head (G : seq 'I_V) (p L : vec) y :
  is_law p -> is_law L ->
  \sum_(s < V) L s *
    output_law (ot p (map Det G ++ [:: Samp s L])) (map Det G ++ [:: Samp s L]) y
  = p y.
Proof.
move=> hp hL; rewrite -(ot_lossless y (one_samp_det_then_samp G hL) hp).
by rewrite expect_det_then_samp.
Qed.

(* acceptance = sum over tokens y of the continue mass into y *)
Lemma acceptance_output (t : transition R V) (cs : seq cand) :
  size (cont t) = size cs ->
  acceptance t = \sum_(y < V) (output_law t cs y - emit t y).
Proof.
rewrite acceptanceE => hsz.
under [RHS]eq_bigr => y _ do rewrite output_lawE.
under [RHS]eq_bigr => y _ do rewrite addrAC subrr add0r.
rewrite exchange_big /=.
elim: cs (cont t) hsz => [|c cs IH] [|w ws] //= hsz; first by rewrite !big_nil.
rewrite !big_cons IH; last by case: hsz.
congr (_ + _).
by rewrite -big_mkcond /= (big_pred1 (token c)) // => z; rewrite eq_sym.
Qed.

Lemma size_ot_cont a m marked seen cs : size (ot_cont a m marked seen cs) = size cs.
Proof. by elim: cs marked seen => //= c cs IH marked seen; rewrite IH. Qed.

Theorem ot_acceptance_given_s (p : vec) (cs : seq cand) s L :
  samp_of cs = Some (s, L) ->
  acceptance (ot p cs) =
  accept p (Samp s L) +
  \sum_(y < V | y \in map token cs) (1 - accept p (Samp s L)) * residual p L y.
Proof.
move=> hs; rewrite (acceptance_output (cs:=cs)); last by rewrite /ot hs /= size_ot_cont.
under eq_bigr => y _ do rewrite (ot_output _ _ hs).
rewrite /ot hs /=.
set a := accept p (Samp s L).
have ha : a = \sum_(i < V) a * (s == i)%:R.
  rewrite (bigD1 s) //= eqxx mulr1 big1 ?addr0 // => i si.
  by rewrite eq_sym (negPf si) mulr0.
rewrite [X in _ = X + _]ha [X in _ = _ + X]big_mkcond -big_split /=; apply: eq_bigr => i _.
case: (i \in map token cs); first by rewrite oppr0 addr0.
by rewrite addrK addr0.
Qed.

(* after a rejection of s, the residual puts no mass on s *)
Lemma rejected_residual_at_s (p L : vec) s :
  0 <= L s -> 0 <= p s ->
  L s * ((1 - accept p (Samp s L)) * residual p L s) = 0.
Proof.
move=> Ls0 ps0; rewrite mulrA mulrBr mulr1 accepted_mass //.
case: (lerP (L s) (p s)) => h; first by rewrite subrr mul0r.
rewrite /residual /normalise /pos.
have -> : Num.max (p s - L s) 0 = 0 by apply/max_idPr; rewrite subr_le0 ltW.
by rewrite mul0r mulr0.
Qed.

Lemma sum_mem_cons_split (f : 'I_V -> R) (G : seq 'I_V) s :
  s \notin G ->
  \sum_(y < V | (y \in G) || (y == s)) f y = \sum_(y < V | y \in G) f y + f s.
Proof.
move=> sG; rewrite (bigD1 s) ?eqxx ?orbT //= addrC; congr (_ + _).
apply: eq_bigl => y; case: (eqVneq y s) => [->|ys]; first by rewrite (negPf sG).
by rewrite orbF andbT.
Qed.

(* The acceptance of ot on the RheoSampling node with head G, when the sampled law
   vanishes on G: p(G) + sum_x min(p(x), L(x)) *)
Theorem ot_acceptance_head (G : seq 'I_V) (p L : vec) :
  is_law p -> is_law L -> (forall x, x \in G -> L x = 0) ->
  \sum_(s < V) L s * acceptance (ot p (map Det G ++ [:: Samp s L])) =
  \sum_(x < V | x \in G) p x + overlap p L.
Proof.
move=> [p0 p1] [L0 L1] LG.
have toks s : map token (map Det G ++ [:: Samp s L]) = G ++ [:: s].
  by rewrite map_cat -map_comp map_id.
pose rG := \sum_(y < V | y \in G) residual p L y.
have step s : L s * acceptance (ot p (map Det G ++ [:: Samp s L])) =
    L s * accept p (Samp s L) + L s * (1 - accept p (Samp s L)) * rG.
  rewrite (ot_acceptance_given_s p (s:=s) (L:=L)); last by rewrite samp_of_cat_det.
  have [sG|sG] := boolP (s \in G); first by rewrite LG // !mul0r addr0.
  under eq_bigl => y do rewrite toks mem_cat mem_seq1.
  rewrite sum_mem_cons_split // addrA.
  have -> : forall u v t : R, L s * (u + v + t) = L s * u + L s * v + L s * t.
    by move=> u v t; rewrite !mulrDr.
  rewrite rejected_residual_at_s // addr0; congr (_ + _).
  rewrite /rG mulr_sumr mulr_sumr; apply: eq_bigr => y _.
  by rewrite mulrA.
under eq_bigr => s _ do rewrite step.
rewrite big_split /= -mulr_suml.
under eq_bigr => s _ do rewrite accepted_mass //.
rewrite (rejected_mass (conj p0 p1) (conj L0 L1)).
rewrite -total_big -/(overlap p L) addrC; congr (_ + _).
rewrite /rG mulr_sumr -(total_pos_residual L p1).
apply: eq_bigr => y yG; rewrite total_mul_normalise; last by move=> x; apply: pos_ge0.
by rewrite /pos LG // subr0; apply/max_idPl.
Qed.

(* No lossless verifier does better on this candidate set (optimal transport, weak
   duality): w s is the law of the output token given s; the acceptance is the chance
   that the output is one of the candidates G + {s}. *)
Theorem ot_optimal (G : seq 'I_V) (p L : vec) (w : 'I_V -> vec) :
  (forall x, 0 <= L x) -> (forall s y, 0 <= w s y) -> (forall s, total (w s) <= 1) ->
  (forall y, \sum_(s < V) L s * w s y = p y) ->
  \sum_(s < V) L s * (\sum_(y < V | (y \in G) || (y == s)) w s y) <=
  \sum_(x < V | x \in G) p x + \sum_(x < V | x \notin G) Num.min (p x) (L x).
Proof.
move=> L0 w0 w1 hw.
have split s : L s * (\sum_(y < V | (y \in G) || (y == s)) w s y) =
    \sum_(y < V | y \in G) L s * w s y + (if s \in G then 0 else L s * w s s).
  have [sG|sG] := boolP (s \in G).
    rewrite addr0 mulr_sumr; apply: eq_bigl => y.
    by case: (eqVneq y s) => [->|]; rewrite ?sG ?orbF.
  by rewrite sum_mem_cons_split // mulrDr mulr_sumr.
under eq_bigr => s _ do rewrite split.
rewrite big_split /= exchange_big /=.
under eq_bigr => y _ do rewrite hw.
apply: ler_add; first by [].
rewrite [X in _ <= X]big_mkcond /=; apply: ler_sum => s _.
case: (s \in G) => //=; rewrite le_minr; apply/andP; split.
  rewrite -hw (bigD1 s) //= ler_addl; apply: sumr_ge0 => i _.
  exact: mulr_ge0.
apply: ler_pimulr => //; apply: le_trans (w1 s).
by rewrite total_big (bigD1 s) //= ler_addl; apply: sumr_ge0.
Qed.

(* so ot attains the optimum: the bound above is its acceptance when L vanishes on G *)
Lemma overlap_outside (G : seq 'I_V) (p L : vec) :
  (forall x, 0 <= p x) -> (forall x, x \in G -> L x = 0) ->
  \sum_(x < V | x \notin G) Num.min (p x) (L x) = overlap p L.
Proof.
move=> p0 LG; rewrite /overlap total_big [in RHS](bigID (fun x => x \in G)) /=.
rewrite [X in _ = X + _]big1 ?add0r // => x xG; rewrite /vmin LG //.
by apply/min_idPr.
Qed.

(* Transitions are laws: ot's continue and emit weights are nonnegative and sum to 1 *)
Lemma samp_of_ok (cs : seq cand) s (L : vec) : samps_ok cs -> samp_of cs = Some (s, L) -> is_law L /\ 0 < L s.
Proof.
elim: cs => //= c cs IH [hc hcs]; case: c hc => [x|s' L'] hc /=; first exact: IH.
by case=> <- <-.
Qed.

Lemma ot_cont_ge0 (a : R) (m : vec) marked seen (cs : seq cand) :
  0 <= a -> (forall y, 0 <= m y) -> all (fun w => 0 <= w) (ot_cont a m marked seen cs).
Proof.
move=> ha hm; elim: cs marked seen => //= c cs IH marked seen; rewrite IH andbT.
by apply: addr_ge0; [case: ifP|case: ifP].
Qed.

Lemma total_output_law (t : transition R V) (cs : seq cand) :
  size (cont t) = size cs -> total (output_law t cs) = acceptance t + total (emit t).
Proof. by move=> h; rewrite (acceptance_output h) !total_big sumrB subrK. Qed.

Lemma sum_delta (a : R) s : \sum_(y < V) a * (s == y)%:R = a.
Proof.
rewrite (bigD1 s) //= eqxx mulr1 big1 ?addr0 // => y ys.
by rewrite eq_sym (negPf ys) mulr0.
Qed.

Lemma residual_ge0 (p L : vec) y : 0 <= residual p L y.
Proof. by rewrite /residual /normalise divr_ge0 ?pos_ge0 // total_ge0 // => x; apply: pos_ge0. Qed.

Lemma total_residual_le1 (p L : vec) : total (residual p L) <= 1.
Proof. by case: (@normalise_subl R V (pos (fun x => p x - L x)) (fun x => pos_ge0 _ x)). Qed.

(* given s ~ L, the output token's law has mass a + (1 - a) total (res(p, L)) *)
Lemma accept_samp_ge0 (p L : vec) s : 0 <= p s -> 0 <= L s -> 0 <= accept p (Samp s L).
Proof. by move=> ps Ls; rewrite /= le_minr ler01 divr_ge0. Qed.

Lemma accept_samp_le1 (p L : vec) s : accept p (Samp s L) <= 1.
Proof. by rewrite /= le_minl lexx. Qed.

Lemma total_ot_output (p : vec) (cs : seq cand) s (L : vec) :
  samp_of cs = Some (s, L) ->
  total (output_law (ot p cs) cs) =
  accept p (Samp s L) + (1 - accept p (Samp s L)) * total (residual p L).
Proof.
move=> hs; rewrite total_big.
under eq_bigr => y _ do rewrite (ot_output _ _ hs).
by rewrite big_split /= sum_delta -mulr_sumr -total_big.
Qed.

Theorem ot_transition (p : vec) (cs : seq cand) :
  is_law p -> samps_ok cs -> is_transition (ot p cs) (size cs).
Proof.
move=> hp hcs; case hs: (samp_of cs) => [[s L]|]; last first.
  by rewrite /ot hs; apply: onehot_transition.
have [hL Ls] := samp_of_ok hcs hs; have [p0 p1] := hp; have [L0 L1] := hL.
have ha0 := accept_samp_ge0 (p0 s) (L0 s); have ha1 := accept_samp_le1 p L s.
have hm y : 0 <= (1 - accept p (Samp s L)) * residual p L y.
  by rewrite mulr_ge0 ?subr_ge0 ?residual_ge0.
have hsize : size (cont (ot p cs)) = size cs by rewrite /ot hs /= size_ot_cont.
split=> //.
- by rewrite /ot hs /=; apply: ot_cont_ge0.
- by move=> y; rewrite /ot hs /=; case: ifP.
rewrite -(total_output_law hsize) (total_ot_output _ hs).
have [hz|hn] := eqVneq (total (pos (fun x => p x - L x))) 0.
  have eqL := pos_total0_eq hp hL hz.
  by rewrite /= eqL divff ?minxx ?subrr ?mul0r ?addr0 // gt_eqF.
by case: (residual_law hn) => _ ->; rewrite mulr1 addrC subrK.
Qed.

(* ot routes the residual mass of each token to the first candidate holding it: the i-th
   continue weight is a if candidate i is the sampled one, plus (1 - a) res(p, L)(y) if i is
   the first index holding its token y *)
Lemma ot_cont_nth (a : R) (m : vec) (marked : bool) (seen : seq 'I_V) (cs : seq cand) (i : nat) (y0 : 'I_V) :
  (i < size cs)%N ->
  nth 0 (ot_cont a m marked seen cs) i =
  (if ~~ marked && (i == find is_samp cs) then a else 0) +
  (if (nth y0 (map token cs) i \notin seen) &&
      (i == index (nth y0 (map token cs) i) (map token cs))
   then m (nth y0 (map token cs) i) else 0).
Proof.
elim: cs i marked seen => [|c cs IH] [|i] marked seen //= hi.
  rewrite eqxx andbT; congr (_ + _); first by case: (is_samp c); rewrite ?andbT ?andbF.
  by case: (token c \in seen).
rewrite (IH i) //; congr (_ + _).
  by case: (is_samp c) => /=; rewrite ?orbT ?orbF ?andbF.
rewrite in_cons negb_or [nth y0 _ i == _]eq_sym; set y := nth y0 (map token cs) i.
by case: (eqVneq (token c) y) => [<-|] //=; rewrite ?andbF.
Qed.

Theorem ot_routing (p : vec) (cs : seq cand) s (L : vec) (i : nat) :
  samp_of cs = Some (s, L) -> (i < size cs)%N ->
  nth 0 (cont (ot p cs)) i =
  (if i == find is_samp cs then accept p (Samp s L) else 0) +
  (if i == index (nth s (map token cs) i) (map token cs)
   then (1 - accept p (Samp s L)) * residual p L (nth s (map token cs) i) else 0).
Proof. by move=> hs hi; rewrite /ot hs /= (ot_cont_nth _ _ _ _ s hi). Qed.

(* ot attains the bound of ot_optimal. A lossless verifier on the candidate set G + {s},
   s ~ L, is a kernel w: w s is the law of its output token given s (nonnegative, mass at most
   1), and averaged over s it is p; it accepts when the output is one of the candidates. ot's
   kernel is one of them, and it accepts the most. *)
Definition lossless_kernel (L p : vec) (w : 'I_V -> vec) : Prop :=
  [/\ forall s y, 0 <= w s y, forall s, total (w s) <= 1 &
      forall y, \sum_(s < V) L s * w s y = p y].

Definition cand_mass (G : seq 'I_V) (L : vec) (w : 'I_V -> vec) : R :=
  \sum_(s < V) L s * (\sum_(y < V | (y \in G) || (y == s)) w s y).

Definition rheo_node (G : seq 'I_V) (s : 'I_V) (L : vec) : seq cand :=
  map Det G ++ [:: Samp s L].

Definition ot_kernel (p L : vec) (G : seq 'I_V) (s : 'I_V) : vec :=
  output_law (ot p (rheo_node G s L)) (rheo_node G s L).

Lemma output_law_notin (t : transition R V) (cs : seq cand) y :
  y \notin map token cs -> output_law t cs y = emit t y.
Proof.
rewrite output_lawE -[RHS]addr0 => hy; congr (_ + _).
elim: cs (cont t) hy => [|c cs IH] [|w ws] //=; rewrite ?big_nil // big_cons.
by rewrite in_cons negb_or eq_sym => /andP [/negPf -> /IH ->]; rewrite addr0.
Qed.

Lemma acceptance_tokens (t : transition R V) (cs : seq cand) :
  size (cont t) = size cs -> (forall y, y \in map token cs -> emit t y = 0) ->
  acceptance t = \sum_(y < V | y \in map token cs) output_law t cs y.
Proof.
move=> hsz h0; rewrite (acceptance_output hsz) (bigID (fun y => y \in map token cs)) /=.
rewrite [X in _ + X]big1 ?addr0 => [|y /output_law_notin ->]; last by rewrite subrr.
by apply: eq_bigr => y /h0 ->; rewrite subr0.
Qed.

Lemma samp_of_rheo_node G s (L : vec) : samp_of (rheo_node G s L) = Some (s, L).
Proof. exact: samp_of_cat_det. Qed.

Lemma tokens_rheo_node G s (L : vec) y :
  (y \in map token (rheo_node G s L)) = (y \in G) || (y == s).
Proof. by rewrite /rheo_node map_cat -map_comp map_id mem_cat mem_seq1. Qed.

Lemma ot_cand_mass (G : seq 'I_V) (p L : vec) :
  cand_mass G L (ot_kernel p L G) =
  \sum_(s < V) L s * acceptance (ot p (rheo_node G s L)).
Proof.
apply: eq_bigr => s _; congr (_ * _).
rewrite (acceptance_tokens (cs:=rheo_node G s L)).
- by apply: eq_bigl => y; rewrite tokens_rheo_node.
- by rewrite /ot samp_of_rheo_node /= size_ot_cont.
by move=> y hy; rewrite /ot samp_of_rheo_node /= hy.
Qed.

Theorem ot_attains_optimum (G : seq 'I_V) (p L : vec) :
  is_law p -> is_law L -> (forall x, x \in G -> L x = 0) ->
  [/\ lossless_kernel L p (ot_kernel p L G),
      forall w, lossless_kernel L p w -> cand_mass G L w <= cand_mass G L (ot_kernel p L G) &
      cand_mass G L (ot_kernel p L G) = \sum_(s < V) L s * acceptance (ot p (rheo_node G s L))].
Proof.
move=> hp hL LG; have [p0 p1] := hp; have [L0 L1] := hL.
have hk : lossless_kernel L p (ot_kernel p L G).
  split=> [s y|s|y].
  - rewrite /ot_kernel (ot_output _ _ (samp_of_rheo_node G s L)).
    have ha0 := accept_samp_ge0 (p0 s) (L0 s); have ha1 := accept_samp_le1 p L s.
    by apply: addr_ge0; apply: mulr_ge0; rewrite ?ler0n ?subr_ge0 ?residual_ge0.
  - rewrite /ot_kernel (total_ot_output _ (samp_of_rheo_node G s L)).
    have ha0 := accept_samp_ge0 (p0 s) (L0 s); have ha1 := accept_samp_le1 p L s.
    rewrite -ler_subr_addl; apply: ler_pimulr; first by rewrite subr_ge0.
    exact: total_residual_le1.
  - exact: ot_lossless_head.
split=> //; last exact: ot_cand_mass.
move=> w [w0 w1 hw]; rewrite ot_cand_mass ot_acceptance_head // -(overlap_outside p0 LG).
exact: ot_optimal.
Qed.

End Ot.

Arguments is_samp {R V} _.
Arguments samp_of {R V} _.
Arguments ot_cont {R V} _ _ _ _ _.
Arguments ot {R V} _ _.
Arguments no_samp {R V} _.
Arguments one_samp {R V} _.
Arguments det_tokens {R V} _.
Arguments det_then_samp {R V} _ _.
Arguments lossless_kernel {R V} _ _ _.
Arguments cand_mass {R V} _ _ _.
Arguments rheo_node {R V} _ _ _.
Arguments ot_kernel {R V} _ _ _ _ _.

Section OnehotAcceptance.

Variable R : realFieldType.
Variable V : nat.

Notation vec := ('I_V -> R).

Lemma size_sequential (p : vec) cs : size (cont (sequential p cs)) = size cs.
Proof. by elim: cs p => //= c cs IH p; rewrite size_map IH. Qed.

Lemma emit_dets_zero (p : vec) (G : seq (cand R V)) y :
  p y = 0 -> emit (onehot p G) y = 0.
Proof.
rewrite /onehot; elim: G p => //= c G IH p py; rewrite IH ?mulr0 //.
by rewrite /normalise /zero_at; case: (y == token c); rewrite ?mul0r // py mul0r.
Qed.

Lemma emit_dets_mem (p : vec) (G : seq (cand R V)) y :
  y \in map token G -> emit (onehot p G) y = 0.
Proof.
elim: G p => //= c G IH p; rewrite in_cons; case: eqP => [->|_] /= h.
  by rewrite emit_dets_zero ?mulr0 // /normalise /zero_at eqxx mul0r.
by rewrite IH ?mulr0.
Qed.

(* onehot's acceptance is p(G), G the set of candidate tokens (duplicates add nothing) *)
Theorem onehot_acceptance (p : vec) (cs : seq (cand R V)) :
  is_law p -> acceptance (onehot p cs) = \sum_(y < V | y \in map token cs) p y.
Proof.
move=> hp; rewrite (acceptance_output (cs:=cs)); last by rewrite size_sequential size_map.
rewrite [RHS]big_mkcond /=; apply: eq_bigr => y _; rewrite onehot_lossless //.
have -> : emit (onehot p cs) y = if y \in map token cs then 0 else p y.
  case: ifP => hy; first by rewrite emit_dets_mem.
  rewrite -(onehot_lossless cs y hp) output_lawE -[LHS]addr0; congr (_ + _); apply/esym.
  elim: cs (cont (onehot p cs)) hy => [|c cs' IH] [|w ws] //=; rewrite ?big_nil //.
  rewrite big_cons in_cons /= => /norP [hc hcs]; rewrite IH; last exact: negbTE hcs.
  by rewrite eq_sym (negPf hc) addr0.
by case: ifP; rewrite ?subr0 ?subrr.
Qed.

End OnehotAcceptance.
