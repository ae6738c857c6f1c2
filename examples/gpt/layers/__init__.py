"""Megatron-style parallel layers. Parameters carry the attributes Megatron-LM sets
(`tensor_model_parallel`, `partition_dim`, `partition_stride`, `sequence_parallel`) so that
ttrace infers their placements the same way it would on a Megatron model."""
