(* Print Assumptions for every main theorem; proofs/coq/check_assumptions.py runs this
   file after the build and fails unless each is closed under the global context. *)
From Rheo Require Import Laws Sequential Ot OtWor Tree Conditions.

Print Assumptions sequential_lossless.
Print Assumptions onehot_lossless.
Print Assumptions onehot_acceptance.
Print Assumptions single_draft_lossless.
Print Assumptions rrs_lossless.
Print Assumptions rrs_wor_lossless.
Print Assumptions sequential_transition.
Print Assumptions onehot_transition.
Print Assumptions single_draft_acceptance.
Print Assumptions ot_output.
Print Assumptions ot_lossless.
Print Assumptions ot_lossless_head.
Print Assumptions ot_acceptance_given_s.
Print Assumptions ot_acceptance_head.
Print Assumptions ot_optimal.
Print Assumptions overlap_outside.
Print Assumptions ot_transition.
Print Assumptions ot_routing.
Print Assumptions ot_attains_optimum.
Print Assumptions ot_wor_output.
Print Assumptions ot_wor_lossless.
Print Assumptions ot_wor_lossless_head.
Print Assumptions ot_wor_transition.
Print Assumptions tree_step_lossless.
Print Assumptions node_ok_sequential.
Print Assumptions node_ok_ot.
Print Assumptions node_ok_onehot.
Print Assumptions node_ok_mix.
Print Assumptions node_ok_mix2.
Print Assumptions C2_C1.
Print Assumptions C1_ot_lossless.
Print Assumptions C2_sequential_lossless.
Print Assumptions node_ok_C1.
Print Assumptions node_ok_C2.
Print Assumptions node_ok_C1_slot.
Print Assumptions cx_C1.
Print Assumptions cx_not_C2.
Print Assumptions C1_without_C2_sequential_lossy.
Print Assumptions C1_without_C2_ot_lossless.
Print Assumptions size_biased_ot_lossy.
Print Assumptions size_biased_sequential_lossy.
