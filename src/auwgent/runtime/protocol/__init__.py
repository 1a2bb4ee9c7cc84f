"""runtime/protocol"""
