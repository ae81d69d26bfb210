"""Context budgets at run time: what goes into a model's context, and how much of it.

Owns the unified context budget (shares, minimums, proportional scaling), bucket overlap and
background de-duplication, the injection manifest, context packing for an intent (the intent
map ``intents.yaml`` is data), and history trimming.
"""
