import java.util.*;
public class Main {
    public static void main(String[] args) {
        HashMap<String, Integer> m = new HashMap<>();
        for (int i = 0; i < 350000; i++) m.put("k" + i, (int) ((i * 7919L) % 1000003));
        long s = 0;
        for (Map.Entry<String, Integer> e : m.entrySet()) s += e.getValue();
        ArrayList<Integer> l = new ArrayList<>(m.values());
        Collections.sort(l);
        System.out.println(m.size() + " " + s + " " + l.get(0) + " " + l.get(l.size() - 1) + " " + l.get(l.size() / 2));
    }
}
