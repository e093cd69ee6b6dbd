"""The granularity- and position-aware task family (STUDY.md section 8, the MGAL seed).

Long documents assembled or loaded in every language with the same paragraph ids; word,
sentence (cloze), paragraph (filling) and document (summary, translation) tasks built once
from English; answered through the same runner, cache and budget as the responses; scored
and analysed by granularity, region and position across languages.
"""
