//! Stage "case": Megatron golden-values JSON (read every corpus shape, write Megatron's byte style).
