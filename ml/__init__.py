"""DecSelfMask core: relevance, peaks, masked examples and metrics. No Django, no Celery."""
