(* Laws over a finite vocabulary 'I_V, mirroring rheotheory/laws.py.

   A law is a function 'I_V -> R (R any real field; the instances in Instances.v
   use rat) with nonnegative values summing to 1. Each definition names the Python
   function it mirrors. *)
From mathcomp Require Import all_ssreflect ssralg ssrnum.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Import Order.TTheory GRing.Theory Num.Theory.
Local Open Scope ring_scope.

(* the tokens 0 .. n-1 in order, built so that they compute (vm_compute); equal to
   enum 'I_n (ords_enum) *)
Fixpoint ords (n : nat) : seq 'I_n :=
  match n return seq 'I_n with 0 => [::] | n'.+1 => ord0 :: map (lift ord0) (ords n') end.

Lemma ords_enum n : ords n = enum 'I_n.
Proof.
apply: (inj_map val_inj); rewrite val_enum_ord.
elim: n => //= n IH; rewrite -map_comp.
have -> : map (val \o lift ord0) (ords n) = map S (map val (ords n)) by rewrite -map_comp.
by rewrite IH -(iotaDl 1 0).
Qed.

(* a sum over a list written as a fold, so that it computes (MathComp's bigops are
   sealed and do not); sum_seqE turns it into a bigop *)
Definition sum_seq (R : zmodType) (I : Type) (F : I -> R) (r : seq I) : R :=
  foldr (fun x acc => F x + acc) 0 r.

Lemma sum_seqE (R : zmodType) (I : Type) (F : I -> R) (r : seq I) :
  sum_seq F r = \sum_(x <- r) F x.
Proof. by elim: r => [|x r IH]; rewrite ?big_nil ?big_cons //= -IH. Qed.

Section Laws.

Variable R : realFieldType.
Variable V : nat.

Notation vec := ('I_V -> R).

(* laws.total *)
Definition total (a : vec) : R := sum_seq a (ords V).

Lemma total_big (a : vec) : total a = \sum_(x < V) a x.
Proof. by rewrite /total sum_seqE ords_enum big_enum. Qed.

(* a law: nonnegative, summing to 1 *)
Definition is_law (a : vec) : Prop := (forall x, 0 <= a x) /\ total a = 1.

(* laws.pos: the elementwise positive part (a)+ *)
Definition pos (a : vec) : vec := fun x => Num.max (a x) 0.

(* laws.minimum *)
Definition vmin (a b : vec) : vec := fun x => Num.min (a x) (b x).

(* laws.normalise: a / sum a; an all-zero vector stays zero (x / 0 = 0 in a field here,
   as the Python function returns the vector unchanged) *)
Definition normalise (a : vec) : vec := fun x => a x / total a.

(* laws.zero_at (one token) *)
Definition zero_at (a : vec) (t : 'I_V) : vec := fun x => if x == t then 0 else a x.

(* laws.restrict: q conditioned to avoid the tokens of G *)
Definition restrict (q : vec) (G : seq 'I_V) : vec :=
  normalise (fun x => if x \in G then 0 else q x).

(* laws.residual: norm((p - L)+) *)
Definition residual (p L : vec) : vec := normalise (pos (fun x => p x - L x)).

(* the accepted mass of one draft, sum_x min(p(x), L(x)) = 1 - TV(p, L) *)
Definition overlap (p L : vec) : R := total (vmin p L).

Lemma min_add_pos (a b : R) : Num.min a b + Num.max (a - b) 0 = a.
Proof.
case: (lerP a b) => [ab|ba]; case: (lerP (a - b) 0) => [h|h].
- by rewrite addr0.
- by move: h; rewrite subr_gt0 ltNge ab.
- by move: h; rewrite subr_le0 leNgt ba.
- by rewrite addrC subrK.
Qed.

Lemma pos_ge0 (a : vec) x : 0 <= pos a x.
Proof. by rewrite /pos le_maxr lexx orbT. Qed.

Lemma total_ge0 (a : vec) : (forall x, 0 <= a x) -> 0 <= total a.
Proof. by move=> h; rewrite total_big; apply: sumr_ge0 => x _. Qed.

Lemma total_add_min_pos (p L : vec) :
  overlap p L + total (pos (fun x => p x - L x)) = total p.
Proof. by rewrite /overlap !total_big -big_split; apply: eq_bigr => x _; apply: min_add_pos. Qed.

Lemma total_pos_residual (p L : vec) :
  total p = 1 -> total (pos (fun x => p x - L x)) = 1 - overlap p L.
Proof. by move=> hp; rewrite -hp -(total_add_min_pos p L) addrC addKr. Qed.

Lemma normalise_law (a : vec) :
  (forall x, 0 <= a x) -> total a != 0 -> is_law (normalise a).
Proof.
move=> h0 hn; split=> [x|].
  by rewrite /normalise divr_ge0 // total_ge0.
by rewrite total_big /normalise -mulr_suml -total_big divff.
Qed.

Lemma total_normalise (a : vec) : total (normalise a) = total a / total a.
Proof. by rewrite /normalise total_big -mulr_suml -total_big. Qed.

Lemma scale_normalise (a : vec) x :
  total a != 0 -> total a * normalise a x = a x.
Proof. by move=> hn; rewrite /normalise mulrC divfK. Qed.

Lemma total_mul_normalise (a : vec) x :
  (forall x, 0 <= a x) -> total a * normalise a x = a x.
Proof.
move=> h0; have [hz|hn] := eqVneq (total a) 0; last exact: scale_normalise.
rewrite hz mul0r; apply/esym.
by move: hz; rewrite total_big => /psumr_eq0P; apply=> // i _; apply: h0.
Qed.

Lemma residual_law (p L : vec) :
  total (pos (fun x => p x - L x)) != 0 -> is_law (residual p L).
Proof. by move=> hn; apply: normalise_law => // x; apply: pos_ge0. Qed.

Lemma total_zero_at (a : vec) t : total (zero_at a t) = total a - a t.
Proof.
rewrite !total_big (bigD1 t) //= [in RHS](bigD1 t) //= /zero_at eqxx add0r.
by rewrite addrC addKr; apply: eq_bigr => x /negPf ->.
Qed.

Lemma zero_at_ge0 (a : vec) t : (forall x, 0 <= a x) -> forall x, 0 <= zero_at a t x.
Proof. by move=> h x; rewrite /zero_at; case: (x == t). Qed.

Lemma law_le1 (a : vec) x : is_law a -> a x <= 1.
Proof.
case=> h0 <-; rewrite total_big (bigD1 x) //= ler_addl.
by apply: sumr_ge0 => i _.
Qed.

(* if (p - L)+ has no mass, two laws are equal *)
Lemma pos_total0_eq (p L : vec) :
  is_law p -> is_law L -> total (pos (fun x => p x - L x)) = 0 -> forall x, p x = L x.
Proof.
move=> [p0 p1] [L0 L1] h.
have hle x : p x <= L x.
  have hx : pos (fun x => p x - L x) x = 0.
    by move: h; rewrite total_big => /psumr_eq0P; apply=> // i _; apply: pos_ge0.
  by move: (lexx (pos (fun x => p x - L x) x)); rewrite {2}hx le_maxl subr_le0 => /andP [].
have hs : \sum_(x < V) (L x - p x) = 0 by rewrite sumrB -!total_big L1 p1 subrr.
have h0 i : true -> 0 <= L i - p i by move=> _; rewrite subr_ge0.
move=> x; have /eqP : L x - p x = 0 by move: hs => /psumr_eq0P; apply.
by rewrite subr_eq0 => /eqP.
Qed.

End Laws.
