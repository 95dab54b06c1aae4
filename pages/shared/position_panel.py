"""The Compare page's position-bias section: the top-1 share by shown position per system and subtask of the view's
task (imported rankings and listwise runs), with intervals against 1/n and the position-over-group flag."""
from __future__ import annotations

import streamlit as st

from pages.view_models.view import View
from audit.formatting import md_text
from audit.engine.choices import LARGER, UNBIASED_NOTE
from audit.engine.positions import first_shown_words, position_grid
from pages.shared import common


def show(view: View) -> None:
    """The section, when the view's task holds ranked pools (nothing otherwise)."""
    with st.spinner("Reading shown positions…"):
        found = common.audit(view).positions
    if found is None:
        return
    st.subheader("Position bias: top-1 share by shown position")
    st.caption(f"Each cell: the share of rankings whose first-ranked candidate was shown at that position, with its "
               f"exact {view.selection.ci:.0%} interval; a position-blind ranker gives "
               f"{found.shares['expected'].iloc[0]:.3f}. "
               f"{UNBIASED_NOTE}")
    st.markdown("\n".join(f"- {md_text(line)}" for line in first_shown_words(found.shares)))
    st.dataframe(position_grid(found), hide_index=True, width="stretch", key="compare_position",
                 column_config={"position_over_group": st.column_config.CheckboxColumn(
                     LARGER, help="larger chi-square across shown positions than across groups, and the positions' "
                                  "test of equal shares rejects at 5 %")})
