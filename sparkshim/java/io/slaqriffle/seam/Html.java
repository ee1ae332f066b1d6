package io.slaqriffle.seam;

/** HTML pieces the tabs' pages share: text made safe for content and attribute values, and their tables' frame. */
public final class Html {
  /** Between a table's header cells and its rows. */
  public static final String HEAD_END = "</tr></thead><tbody>";

  private Html() {}

  /** The start of a page's table: its heading, then the table (Spark's own table classes) up to its header cells. */
  public static String tableStart(String heading, String id) {
    return "<h4>" + heading + "</h4><table id=\"" + id + "\" class=\"table table-bordered table-sm table-striped\"><thead><tr>";
  }

  /** {@code s} safe for HTML and SVG content and attribute values (job, stage and merger names are user input). */
  public static String escape(String s) {
    StringBuilder b = new StringBuilder(s.length());
    for (char c : s.toCharArray()) {
      switch (c) {
        case '&' -> b.append("&amp;");
        case '<' -> b.append("&lt;");
        case '>' -> b.append("&gt;");
        case '"' -> b.append("&quot;");
        case '\'' -> b.append("&#39;");
        default -> b.append(c);
      }
    }
    return b.toString();
  }
}
