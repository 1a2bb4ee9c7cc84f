"""runtime/providers"""
