"""nerselect: choose pretraining data for named entity recognition.

Everything the app does lives here and runs without Streamlit; `python -m core`
is the command line over the same functions.
"""

__version__ = "0.1.0"
